import Foundation
import Wire

/// `catalogue.posts.update`: the post's id, any field of a draft, and optionally
/// the version the change was made against. An absent field is unchanged; `null`
/// clears an optional one (`tags: null` empties the list).
public struct UpdatePostRequest: ValidatedBody, Equatable {
    public var id: String
    public var ifVersion: Int?
    public var kind: Patch<String>
    public var title: Patch<String>
    public var text: Patch<String>
    public var lat: Patch<Double>
    public var lon: Patch<Double>
    public var category: Patch<String>
    public var tags: Patch<[String]>
    public var price: Patch<Price>
    public var hours: Patch<String>
    public var timezone: Patch<String>
    public var place: Patch<PostPlace>
    public var notifyRadius: Patch<Double>
    public var ref: Patch<String>

    public init(id: String, ifVersion: Int? = nil, kind: Patch<String> = .unchanged, title: Patch<String> = .unchanged,
                text: Patch<String> = .unchanged, lat: Patch<Double> = .unchanged, lon: Patch<Double> = .unchanged,
                category: Patch<String> = .unchanged, tags: Patch<[String]> = .unchanged, price: Patch<Price> = .unchanged,
                hours: Patch<String> = .unchanged, timezone: Patch<String> = .unchanged, place: Patch<PostPlace> = .unchanged,
                notifyRadius: Patch<Double> = .unchanged, ref: Patch<String> = .unchanged) {
        self.id = id
        self.ifVersion = ifVersion
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

    enum CodingKeys: String, CodingKey {
        case id, ifVersion, kind, title, text, lat, lon, category, tags, price, hours, timezone, place, notifyRadius, ref
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        ifVersion = try container.decodeIfPresent(Int.self, forKey: .ifVersion)
        kind = try container.decodePatch(String.self, forKey: .kind)
        title = try container.decodePatch(String.self, forKey: .title)
        text = try container.decodePatch(String.self, forKey: .text)
        lat = try container.decodePatch(Double.self, forKey: .lat)
        lon = try container.decodePatch(Double.self, forKey: .lon)
        category = try container.decodePatch(String.self, forKey: .category)
        tags = try container.decodePatch([String].self, forKey: .tags)
        price = try container.decodePatch(Price.self, forKey: .price)
        hours = try container.decodePatch(String.self, forKey: .hours)
        timezone = try container.decodePatch(String.self, forKey: .timezone)
        place = try container.decodePatch(PostPlace.self, forKey: .place)
        notifyRadius = try container.decodePatch(Double.self, forKey: .notifyRadius)
        ref = try container.decodePatch(String.self, forKey: .ref)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(ifVersion, forKey: .ifVersion)
        try container.encodePatch(kind, forKey: .kind)
        try container.encodePatch(title, forKey: .title)
        try container.encodePatch(text, forKey: .text)
        try container.encodePatch(lat, forKey: .lat)
        try container.encodePatch(lon, forKey: .lon)
        try container.encodePatch(category, forKey: .category)
        try container.encodePatch(tags, forKey: .tags)
        try container.encodePatch(price, forKey: .price)
        try container.encodePatch(hours, forKey: .hours)
        try container.encodePatch(timezone, forKey: .timezone)
        try container.encodePatch(place, forKey: .place)
        try container.encodePatch(notifyRadius, forKey: .notifyRadius)
        try container.encodePatch(ref, forKey: .ref)
    }

    public func validate() throws {
        try Check.entityID(id, field: "id")
        if let ifVersion { try Check.range(ifVersion, field: "ifVersion", in: 1...Int.max) }
        for (patch, field) in [(kind, "kind"), (title, "title")] where patch == .cleared {
            throw ServiceError.invalidArgument(field: field, "\(field) cannot be cleared")
        }
        for (patch, field) in [(lat, "lat"), (lon, "lon")] where patch == .cleared {
            throw ServiceError.invalidArgument(field: field, "\(field) cannot be cleared")
        }
    }

    /// The draft after this update; the caller validates it as a whole (hours need
    /// a time zone whichever of them changed).
    public func applied(to draft: PostDraft) -> PostDraft {
        var result = draft
        if case .set(let value) = kind { result.kind = value }
        if case .set(let value) = title { result.title = value }
        result.text = text.applied(to: draft.text) ?? ""
        if case .set(let value) = lat { result.lat = value }
        if case .set(let value) = lon { result.lon = value }
        result.category = category.applied(to: draft.category)
        result.tags = tags.applied(to: draft.tags) ?? []
        result.price = price.applied(to: draft.price)
        result.hours = hours.applied(to: draft.hours)
        result.timezone = timezone.applied(to: draft.timezone)
        result.place = place.applied(to: draft.place)
        result.notifyRadius = notifyRadius.applied(to: draft.notifyRadius)
        result.ref = ref.applied(to: draft.ref)
        return result
    }
}

/// A body naming one thing by `id`.
public struct IDRequest: ValidatedBody, Equatable {
    public var id: String
    public init(id: String) { self.id = id }
    public func validate() throws { try Check.entityID(id, field: "id") }
}

public struct GetPostsRequest: ValidatedBody, Equatable {
    public var ids: [String]
    public static let maxIDs = 200
    public init(ids: [String]) { self.ids = ids }
    public func validate() throws { try Check.entityIDs(ids, field: "ids", max: Self.maxIDs) }
}

/// `catalogue.posts.list`: newest first, filtered by any of these.
public struct ListPostsRequest: ValidatedBody, Equatable {
    public var owner: String?
    public var kind: String?
    public var category: String?
    /// Compared ignoring case.
    public var city: String?
    public var countryCode: String?
    public var limit: Int?
    public var cursor: String?

    public init(owner: String? = nil, kind: String? = nil, category: String? = nil, city: String? = nil,
                countryCode: String? = nil, limit: Int? = nil, cursor: String? = nil) {
        self.owner = owner
        self.kind = kind
        self.category = category
        self.city = city
        self.countryCode = countryCode
        self.limit = limit
        self.cursor = cursor
    }

    public func validate() throws {
        if let owner { try Check.entityID(owner, field: "owner") }
        if let kind { try CatalogueRules.kind(kind, field: "kind") }
        if let category { try CatalogueRules.category(category, field: "category") }
        if let city { try Check.length(city, field: "city", in: CatalogueRules.city) }
        if let countryCode { _ = try CatalogueRules.countryCode(countryCode, field: "countryCode") }
        _ = try Check.limit(limit)
        if let cursor { try Check.length(cursor, field: "cursor", in: 1...100) }
    }
}

public struct AddImageRequest: ValidatedBody, Equatable {
    public var postId: String
    public init(postId: String) { self.postId = postId }
    public func validate() throws { try Check.entityID(postId, field: "postId") }
}

public struct SetRatingRequest: ValidatedBody, Equatable {
    public var postId: String
    public var stars: Int
    public init(postId: String, stars: Int) {
        self.postId = postId
        self.stars = stars
    }

    public func validate() throws {
        try Check.entityID(postId, field: "postId")
        try Check.range(stars, field: "stars", in: 1...5)
    }
}

public struct CreateTripRequest: ValidatedBody, Equatable {
    public var title: String
    public var city: String
    public var countryCode: String
    public var lat: Double?
    public var lon: Double?
    public var start: LocalDate?
    public var end: LocalDate?

    public init(title: String, city: String, countryCode: String, lat: Double? = nil, lon: Double? = nil,
                start: LocalDate? = nil, end: LocalDate? = nil) {
        self.title = title
        self.city = city
        self.countryCode = countryCode
        self.lat = lat
        self.lon = lon
        self.start = start
        self.end = end
    }

    public func validate() throws {
        try CatalogueRules.line(title, field: "title", length: CatalogueRules.title)
        try CatalogueRules.line(city, field: "city", length: CatalogueRules.city)
        _ = try CatalogueRules.countryCode(countryCode, field: "countryCode")
        switch (lat, lon) {
        case (let lat?, let lon?):
            try Check.latitude(lat)
            try Check.longitude(lon)
        case (nil, nil):
            break
        case (nil, _):
            throw ServiceError.invalidArgument(field: "lat", "lat and lon come together")
        case (_, nil):
            throw ServiceError.invalidArgument(field: "lon", "lat and lon come together")
        }
        if let start, let end, end < start {
            throw ServiceError.invalidArgument(field: "end", "end must not be before start")
        }
    }
}

public struct InviteRequest: ValidatedBody, Equatable {
    public var id: String
    public var userId: String
    public init(id: String, userId: String) {
        self.id = id
        self.userId = userId
    }

    public func validate() throws {
        try Check.entityID(id, field: "id")
        try Check.entityID(userId, field: "userId")
    }
}
