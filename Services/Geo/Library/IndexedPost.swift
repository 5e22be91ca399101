import Contracts
import Foundation

/// What geo keeps of a post: the fields of a hit, what its words come from, and
/// what fences and opening hours need. Stored in geo's file, one row each.
struct IndexedPost: Sendable, Equatable {
    var id: String
    var ownerId: String
    var kind: String
    var title: String
    var text: String
    var lat: Double
    var lon: Double
    var category: String?
    var tags: [String]
    var ref: String?
    var hours: String?
    var timezone: String?
    var notifyRadius: Double?
    var rating: Rating
    var createdAt: Date

    init(id: String, ownerId: String, kind: String, title: String, text: String, lat: Double, lon: Double,
         category: String? = nil, tags: [String] = [], ref: String? = nil, hours: String? = nil, timezone: String? = nil,
         notifyRadius: Double? = nil, rating: Rating = Rating(average: nil, count: 0), createdAt: Date) {
        self.id = id
        self.ownerId = ownerId
        self.kind = kind
        self.title = title
        self.text = text
        self.lat = lat
        self.lon = lon
        self.category = category
        self.tags = tags
        self.ref = ref
        self.hours = hours
        self.timezone = timezone
        self.notifyRadius = notifyRadius
        self.rating = rating
        self.createdAt = createdAt
    }

    init(_ post: Post) {
        self.init(id: post.id, ownerId: post.ownerId, kind: post.kind, title: post.title, text: post.text, lat: post.lat,
                  lon: post.lon, category: post.category, tags: post.tags, ref: post.ref, hours: post.hours,
                  timezone: post.timezone, notifyRadius: post.notifyRadius, rating: post.rating, createdAt: post.createdAt)
    }
}
