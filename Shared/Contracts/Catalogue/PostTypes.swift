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

/// A post of any kind: an offer, a restaurant, a sight, a tip, an event … Its
/// owner-set fields are its `draft`, read and written through the post itself
/// (`post.title`); the rest the service keeps.
@dynamicMemberLookup
public struct Post: Codable, Sendable, Equatable {
    public var id: String
    public var ownerId: String
    public var draft: PostDraft
    /// `hours` in the opening_hours specification's standard spelling (`Mon-Fri 8-18`
    /// is `Mo-Fr 08:00-18:00`), kept beside the original; the same text when that was
    /// standard, nil without hours. Catalogue sets it on each write.
    public var hoursNormalized: String?
    public var images: [PostImage]
    public var rating: Rating
    /// 1 at creation, +1 on each change by the owner (ratings do not count).
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date

    public init(id: String, ownerId: String, draft: PostDraft, hoursNormalized: String? = nil, images: [PostImage] = [],
                rating: Rating = Rating(average: nil, count: 0), version: Int = 1, createdAt: Date, updatedAt: Date) {
        self.id = id
        self.ownerId = ownerId
        self.draft = draft
        self.hoursNormalized = hoursNormalized
        self.images = images
        self.rating = rating
        self.version = version
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public subscript<Value>(dynamicMember field: WritableKeyPath<PostDraft, Value>) -> Value {
        get { draft[keyPath: field] }
        set { draft[keyPath: field] = newValue }
    }

    enum CodingKeys: String, CodingKey {
        case id, ownerId, hoursNormalized, images, rating, version, createdAt, updatedAt
    }

    /// One flat object: the draft's fields between `ownerId` and `images`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        ownerId = try container.decode(String.self, forKey: .ownerId)
        draft = try PostDraft(from: decoder)
        hoursNormalized = try container.decodeIfPresent(String.self, forKey: .hoursNormalized)
        images = try container.decode([PostImage].self, forKey: .images)
        rating = try container.decode(Rating.self, forKey: .rating)
        version = try container.decode(Int.self, forKey: .version)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        updatedAt = try container.decode(Date.self, forKey: .updatedAt)
    }

    /// Every field is written, absent ones as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(ownerId, forKey: .ownerId)
        try draft.encode(to: encoder)
        try container.encode(hoursNormalized, forKey: .hoursNormalized)
        try container.encode(images, forKey: .images)
        try container.encode(rating, forKey: .rating)
        try container.encode(version, forKey: .version)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(updatedAt, forKey: .updatedAt)
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
