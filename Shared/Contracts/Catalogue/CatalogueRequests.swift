import Foundation
import Wire

/// `catalogue.posts.update`: the post's id, any field of a draft, and optionally
/// the version the change was made against. An absent field is unchanged; `null`
/// clears an optional one (`tags: null` empties the list). The fields are the
/// draft's own: a change is laid over the post's draft as JSON and read back as a
/// draft, so a field added to `PostDraft` can be updated with nothing added here.
public struct UpdatePostRequest: ValidatedBody, Equatable {
    public var id: String
    public var ifVersion: Int?
    /// The draft's fields that change, by their JSON names: a value sets one,
    /// `null` clears it.
    public private(set) var changes: JSONObject

    public init(id: String, ifVersion: Int? = nil, changes: JSONObject = [:]) {
        self.id = id
        self.ifVersion = ifVersion
        self.changes = JSONObject(changes.filter { PostDraft.Field(stringValue: $0.key) != nil })
    }

    /// Sets `field` to `value`; `nil` clears it.
    public mutating func set(_ field: PostDraft.Field, to value: (some Encodable)?) throws {
        changes[field.stringValue] = try value.map { try JSONValueEncoder().encode($0) } ?? .null
    }

    private enum Key: String, CodingKey { case id, ifVersion }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        id = try container.decode(String.self, forKey: .id)
        ifVersion = try container.decodeIfPresent(Int.self, forKey: .ifVersion)
        let fields = try decoder.container(keyedBy: PostDraft.Field.self)
        changes = JSONObject(try PostDraft.Field.allCases.filter(fields.contains).map { field in
            (field.stringValue, try fields.decode(JSONValue.self, forKey: field))
        })
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(id, forKey: .id)
        try container.encodeIfPresent(ifVersion, forKey: .ifVersion)
        var fields = encoder.container(keyedBy: PostDraft.Field.self)
        for (name, value) in changes {
            if let field = PostDraft.Field(stringValue: name) { try fields.encode(value, forKey: field) }
        }
    }

    /// Checks the id, the version, and each change's type against a stand-in draft:
    /// a request that passes fails later only on the post's own rules.
    public func validate() throws {
        try Check.entityID(id, field: "id")
        if let ifVersion { try Check.range(ifVersion, field: "ifVersion", in: 1...Int.max) }
        _ = try applied(to: PostDraft(kind: "offer", title: "stand-in", lat: 0, lon: 0))
    }

    /// The draft after this update; the caller validates it as a whole (hours need
    /// a time zone whichever of them changed).
    public func applied(to draft: PostDraft) throws -> PostDraft {
        let current = try JSONValueEncoder().encode(draft).objectValue ?? [:]
        var merged = current
        for (name, value) in changes {
            merged[name] = value
            // A required field has no absent form.
            var cleared = current
            cleared[name] = .null
            if value == .null, (try? JSONValueDecoder().decode(PostDraft.self, from: .object(cleared))) == nil {
                throw ServiceError.invalidArgument(field: name, "\(name) cannot be cleared")
            }
        }
        return try JSONValueDecoder().decode(PostDraft.self, from: .object(merged))
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
