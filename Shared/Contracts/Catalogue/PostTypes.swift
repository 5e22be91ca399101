import Foundation
import Wire

/// A price: an amount in an ISO 4217 currency.
public struct Price: Codable, Sendable, Equatable {
    public var amount: Double
    public var currency: String

    public init(amount: Double, currency: String) {
        self.amount = amount
        self.currency = currency
    }
}

/// Where a post is, in words: a city and its country.
public struct PostPlace: Codable, Sendable, Equatable {
    public var city: String
    public var countryCode: String

    public init(city: String, countryCode: String) {
        self.city = city
        self.countryCode = countryCode
    }
}

/// A post's rating: the mean of its users' stars (two decimals; null while unrated)
/// and how many rated it.
public struct Rating: Codable, Sendable, Equatable {
    public var average: Double?
    public var count: Int

    public init(average: Double?, count: Int) {
        self.average = average
        self.count = count
    }

    /// The rating from the sum and count of stars.
    public init(sum: Int, count: Int) {
        self.init(average: count == 0 ? nil : (Double(sum) / Double(count) * 100).rounded() / 100, count: count)
    }

    enum CodingKeys: String, CodingKey { case average, count }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(average, forKey: .average)
        try container.encode(count, forKey: .count)
    }
}

/// An image's metadata; its bytes come with `catalogue.images.get`.
public struct PostImage: Codable, Sendable, Equatable {
    public var id: String
    public var contentType: String
    public var width: Int
    public var height: Int
    /// The file's size.
    public var bytes: Int

    public init(id: String, contentType: String, width: Int, height: Int, bytes: Int) {
        self.id = id
        self.contentType = contentType
        self.width = width
        self.height = height
        self.bytes = bytes
    }
}

/// A post of any kind: an offer, a restaurant, a sight, a tip, an event …
public struct Post: Codable, Sendable, Equatable {
    public var id: String
    public var ownerId: String
    public var kind: String
    public var title: String
    public var text: String
    public var lat: Double
    public var lon: Double
    public var category: String?
    public var tags: [String]
    public var price: Price?
    public var hours: String?
    public var timezone: String?
    public var place: PostPlace?
    public var notifyRadius: Double?
    public var ref: String?
    public var images: [PostImage]
    public var rating: Rating
    /// 1 at creation, +1 on each change by the owner (ratings do not count).
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: String, ownerId: String, kind: String, title: String, text: String, lat: Double, lon: Double,
                category: String? = nil, tags: [String] = [], price: Price? = nil, hours: String? = nil,
                timezone: String? = nil, place: PostPlace? = nil, notifyRadius: Double? = nil, ref: String? = nil,
                images: [PostImage] = [], rating: Rating = Rating(average: nil, count: 0), version: Int = 1,
                createdAt: Date, updatedAt: Date) {
        self.id = id
        self.ownerId = ownerId
        self.kind = kind
        self.title = title
        self.text = text
        self.lat = lat
        self.lon = lon
        self.category = category
        self.tags = tags
        self.price = price
        self.hours = hours
        self.timezone = timezone
        self.place = place
        self.notifyRadius = notifyRadius
        self.ref = ref
        self.images = images
        self.rating = rating
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    enum CodingKeys: String, CodingKey {
        case id, ownerId, kind, title, text, lat, lon, category, tags, price, hours, timezone, place, notifyRadius, ref,
             images, rating, version, createdAt, updatedAt
    }

    /// Every field is written, absent ones as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(ownerId, forKey: .ownerId)
        try container.encode(kind, forKey: .kind)
        try container.encode(title, forKey: .title)
        try container.encode(text, forKey: .text)
        try container.encode(lat, forKey: .lat)
        try container.encode(lon, forKey: .lon)
        try container.encode(category, forKey: .category)
        try container.encode(tags, forKey: .tags)
        try container.encode(price, forKey: .price)
        try container.encode(hours, forKey: .hours)
        try container.encode(timezone, forKey: .timezone)
        try container.encode(place, forKey: .place)
        try container.encode(notifyRadius, forKey: .notifyRadius)
        try container.encode(ref, forKey: .ref)
        try container.encode(images, forKey: .images)
        try container.encode(rating, forKey: .rating)
        try container.encode(version, forKey: .version)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
    }

    /// A new post with the fields of `draft`.
    public init(id: String, ownerId: String, draft: PostDraft, createdAt: Date, updatedAt: Date) {
        self.init(id: id, ownerId: ownerId, kind: draft.kind, title: draft.title, text: draft.text, lat: draft.lat, lon: draft.lon,
                  createdAt: createdAt, updatedAt: updatedAt)
        self.draft = draft
    }

    /// The fields an owner sets, as a draft (what `catalogue.posts.import` compares).
    public var draft: PostDraft {
        get {
            PostDraft(kind: kind, title: title, text: text, lat: lat, lon: lon, category: category, tags: tags, price: price,
                      hours: hours, timezone: timezone, place: place, notifyRadius: notifyRadius, ref: ref)
        }
        set {
            kind = newValue.kind
            title = newValue.title
            text = newValue.text
            lat = newValue.lat
            lon = newValue.lon
            category = newValue.category
            tags = newValue.tags
            price = newValue.price
            hours = newValue.hours
            timezone = newValue.timezone
            place = newValue.place
            notifyRadius = newValue.notifyRadius
            ref = newValue.ref
        }
    }
}

/// One entry of `catalogue.changes`.
public struct PostChange: FeedChange, Equatable {
    public enum Kind: String, Codable, Sendable {
        case upserted = "post.upserted"
        case deleted = "post.deleted"
    }

    public var seq: Int64
    public var type: Kind
    public var postId: String
    /// The whole post (without image bytes); absent for `post.deleted`.
    public var post: Post?

    public init(seq: Int64, type: Kind, postId: String, post: Post?) {
        self.seq = seq
        self.type = type
        self.postId = postId
        self.post = post
    }

    public var entity: String { postId }

    public static func deletion(of entity: String, seq: Int64) -> PostChange {
        PostChange(seq: seq, type: .deleted, postId: entity, post: nil)
    }
}
