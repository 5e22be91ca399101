import Foundation
import Wire

/// The fields of a post its owner sets: the body of `catalogue.posts.create`, each
/// item of `catalogue.posts.import` (there with `ref`), and the part of a `Post` an
/// update changes. Each field is declared here once; `Post`, `UpdatePostRequest`
/// and geo's indexed post hold a draft rather than repeating them.
public struct PostDraft: Codable, Sendable, Equatable {
    public var kind: String
    public var title: String
    public var text: String
    public var lat: Double
    public var lon: Double
    public var category: String?
    public var tags: [String]
    public var price: Price?
    /// OSM `opening_hours`; needs `timezone`.
    public var hours: String?
    /// An IANA time zone name such as `Europe/Amsterdam`.
    public var timezone: String?
    public var place: PostPlace?
    /// Metres, 10–5,000: the post is a geofence.
    public var notifyRadius: Double?
    /// The owner's own id for the post (the feed's id in an import).
    public var ref: String?

    public init(kind: String, title: String, text: String = "", lat: Double, lon: Double, category: String? = nil,
                tags: [String] = [], price: Price? = nil, hours: String? = nil, timezone: String? = nil,
                place: PostPlace? = nil, notifyRadius: Double? = nil, ref: String? = nil) {
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
    }

    /// The draft's fields by their JSON names.
    public enum Field: String, CodingKey, CaseIterable, Sendable {
        case kind, title, text, lat, lon, category, tags, price, hours, timezone, place, notifyRadius, ref
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Field.self)
        kind = try container.decode(String.self, forKey: .kind)
        title = try container.decode(String.self, forKey: .title)
        text = try container.decodeIfPresent(String.self, forKey: .text) ?? ""
        lat = try container.decode(Double.self, forKey: .lat)
        lon = try container.decode(Double.self, forKey: .lon)
        category = try container.decodeIfPresent(String.self, forKey: .category)
        tags = try container.decodeIfPresent([String].self, forKey: .tags) ?? []
        price = try container.decodeIfPresent(Price.self, forKey: .price)
        hours = try container.decodeIfPresent(String.self, forKey: .hours)
        timezone = try container.decodeIfPresent(String.self, forKey: .timezone)
        place = try container.decodeIfPresent(PostPlace.self, forKey: .place)
        notifyRadius = try container.decodeIfPresent(Double.self, forKey: .notifyRadius)
        ref = try container.decodeIfPresent(String.self, forKey: .ref)
    }

    /// Every field is written, absent ones as `null` (which reads back as absent):
    /// a post's JSON shows each of its fields.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Field.self)
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
    }

    /// Checks the protocol's rules and returns the draft in its stored form: country
    /// and currency codes upper-cased, tags without repeats (ignoring case).
    /// `prefix` makes field paths of import items read `posts[3].title`.
    public func validated(prefix: String = "") throws -> PostDraft {
        var draft = self
        try CatalogueRules.kind(kind, field: prefix + "kind")
        try CatalogueRules.line(title, field: prefix + "title", length: CatalogueRules.title)
        try Check.length(text, field: prefix + "text", in: 0...CatalogueRules.maxText)
        try Check.latitude(lat, field: prefix + "lat")
        try Check.longitude(lon, field: prefix + "lon")
        if let category { try CatalogueRules.category(category, field: prefix + "category") }
        guard tags.count <= CatalogueRules.maxTags else {
            throw ServiceError.invalidArgument(field: prefix + "tags", "\(prefix)tags may hold at most \(CatalogueRules.maxTags) tags")
        }
        var seen = Set<String>()
        draft.tags = []
        for (index, tag) in tags.enumerated() {
            try CatalogueRules.line(tag, field: "\(prefix)tags[\(index)]", length: CatalogueRules.tag)
            if seen.insert(tag.lowercased()).inserted { draft.tags.append(tag) }
        }
        if let price {
            guard price.amount.isFinite, (0...CatalogueRules.maxPrice).contains(price.amount) else {
                throw ServiceError.invalidArgument(field: prefix + "price.amount", "\(prefix)price.amount must be from 0 to 10^12")
            }
            draft.price?.currency = try CatalogueRules.currency(price.currency, field: prefix + "price.currency")
        }
        if let hours { try Check.length(hours, field: prefix + "hours", in: 1...CatalogueRules.maxHours) }
        if let timezone { try Check.length(timezone, field: prefix + "timezone", in: 1...64) }
        if hours != nil && timezone == nil {
            throw ServiceError.invalidArgument(field: prefix + "timezone", "\(prefix)timezone is required with hours: the IANA zone they are in, such as Europe/Amsterdam")
        }
        if let place {
            try CatalogueRules.line(place.city, field: prefix + "place.city", length: CatalogueRules.city)
            draft.place?.countryCode = try CatalogueRules.countryCode(place.countryCode, field: prefix + "place.countryCode")
        }
        if let notifyRadius { try Check.range(notifyRadius, field: prefix + "notifyRadius", in: CatalogueRules.notifyRadius) }
        if let ref { try CatalogueRules.line(ref, field: prefix + "ref", length: CatalogueRules.ref) }
        return draft
    }
}

/// `catalogue.posts.create`.
public struct CreatePostRequest: ValidatedBody, Equatable {
    public var draft: PostDraft

    public init(_ draft: PostDraft) { self.draft = draft }

    public init(from decoder: any Decoder) throws { draft = try PostDraft(from: decoder) }
    public func encode(to encoder: any Encoder) throws { try draft.encode(to: encoder) }
    public func validate() throws { _ = try validated() }
    public func validated() throws -> CreatePostRequest { CreatePostRequest(try draft.validated()) }
}

/// `catalogue.posts.import`: up to 1,000 drafts, each with a `ref`, upserted by
/// (owner, ref).
public struct ImportPostsRequest: ValidatedBody, Equatable {
    public var posts: [PostDraft]
    public static let maxPosts = 1000

    public init(posts: [PostDraft]) { self.posts = posts }

    public func validate() throws { _ = try validated() }

    public func validated() throws -> ImportPostsRequest {
        guard (1...Self.maxPosts).contains(posts.count) else {
            throw ServiceError.invalidArgument(field: "posts", "posts must hold 1–\(Self.maxPosts) posts (it has \(posts.count))")
        }
        var refs = Set<String>()
        var normalized: [PostDraft] = []
        normalized.reserveCapacity(posts.count)
        for (index, post) in posts.enumerated() {
            let prefix = "posts[\(index)]."
            normalized.append(try post.validated(prefix: prefix))
            guard let ref = post.ref else {
                throw ServiceError.invalidArgument(field: prefix + "ref", "\(prefix)ref is required in an import: it is how a post is found again")
            }
            guard refs.insert(ref).inserted else {
                throw ServiceError.invalidArgument(field: prefix + "ref", "\(prefix)ref \"\(ref)\" appears twice in this import")
            }
        }
        return ImportPostsRequest(posts: normalized)
    }
}
