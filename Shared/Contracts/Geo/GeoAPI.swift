import Foundation
import Wire

/// The geo service's ops.
public enum GeoAPI {
    public static let service = "geo"

    public static let search = Op<SearchRequest, SearchReply>("geo.search", access: .anyone, effect: .read)
    public static let nearest = Op<NearestRequest, HitsReply>("geo.nearest", access: .anyone, effect: .read)
    public static let within = Op<WithinRequest, HitsReply>("geo.within", access: .anyone, effect: .read)
    public static let usersNear = Op<UsersNearRequest, UsersNearReply>("geo.users.near", access: .user, effect: .read)
    public static let placesSearch = Op<PlacesSearchRequest, PlacesReply>("geo.places.search", access: .anyone, effect: .read)
    public static let placesReverse = Op<PlacesReverseRequest, PlaceReverseReply>("geo.places.reverse", access: .anyone,
                                                                                  effect: .read)
    public static let countriesGet = Op<CountryRequest, CountryReply>("geo.countries.get", access: .anyone, effect: .read)
    public static let fencesUpdate = Op<FenceUpdateRequest, FenceUpdateReply>("geo.fences.update", access: .user, effect: .write)
    public static let fencesPlan = Op<FencePlanRequest, FencePlanReply>("geo.fences.plan", access: .anyone, effect: .read)
    public static let stats = Op<Empty, GeoStats>("geo.stats", access: .anyone, effect: .read)

    /// The ops that change geo's file. With geo run as replicas, each with its own
    /// file, clients send these to replica 0 alone, the file that keeps fences (and
    /// so the one a backup copies); other replicas refuse a fence update.
    public static let ownerOps: Set<String> = [fencesUpdate.name, BackupAPI.backup(service).name]
    public static let health = HealthAPI.health(service)

    /// The PUB topic of one user's fence crossings (body: `FenceEvent`).
    public static func fenceTopic(userId: String) -> String { fenceTopicPrefix + userId + "/" }
    public static let fenceTopicPrefix = "geo.fence/"
}

/// How `geo.search` orders its hits; ties are broken by `id`.
public enum SearchSort: String, Codable, Sendable, StringEnum {
    /// Nearest first.
    case distance
    /// Latest created first.
    case newest
    /// By title, case- and accent-insensitive, A–Z.
    case title
    /// By title, Z–A.
    case titleDescending = "-title"
    /// Highest average first, unrated last.
    case rating
}

public struct SearchRequest: ValidatedBody, Equatable {
    public var lat: Double?
    public var lon: Double?
    /// A place name instead of `lat` and `lon`: the gazetteer's best match is the centre.
    public var place: String?
    public var radius: Double
    public var q: String?
    public var kinds: [String]?
    public var tags: [String]?
    public var openNow: Bool?
    /// The instant for `openStatus` and `openNow`; now when absent.
    public var at: Date?
    public var sort: SearchSort?
    public var limit: Int?
    public var cursor: String?
    /// The language of `center.place`'s name (BCP 47); English when absent.
    public var lang: String?
    /// False to leave out hits' `highlights` (where `q`'s words are in each title).
    public var highlight: Bool?

    public init(lat: Double?, lon: Double?, place: String? = nil, radius: Double, q: String? = nil, kinds: [String]? = nil,
                tags: [String]? = nil, openNow: Bool? = nil, at: Date? = nil, sort: SearchSort? = nil, limit: Int? = nil,
                cursor: String? = nil, lang: String? = nil, highlight: Bool? = nil) {
        self.lat = lat
        self.lon = lon
        self.place = place
        self.radius = radius
        self.q = q
        self.kinds = kinds
        self.tags = tags
        self.openNow = openNow
        self.at = at
        self.sort = sort
        self.limit = limit
        self.cursor = cursor
        self.lang = lang
        self.highlight = highlight
    }

    public func validate() throws {
        try GeoRules.center(lat: lat, lon: lon, place: place)
        try Check.range(radius, field: "radius", in: GeoRules.radius)
        try GeoRules.filters(q: q, kinds: kinds, tags: tags)
        _ = try Check.limit(limit)
        try GeoRules.cursor(cursor)
        _ = try Check.languageTag(lang)
    }
}

/// `geo.search` is the op searched most, so a service reads its body member by
/// member; in the order the members are declared, so the first error is the one
/// `Decodable` would report (a test checks the two agree).
extension SearchRequest: FieldsDecodable {
    public init(fields: JSONFields) throws {
        self.init(lat: try fields.doubleIfPresent("lat"), lon: try fields.doubleIfPresent("lon"),
                  place: try fields.stringIfPresent("place"), radius: try fields.double("radius"),
                  q: try fields.stringIfPresent("q"), kinds: try fields.decodeIfPresent([String].self, forKey: "kinds"),
                  tags: try fields.decodeIfPresent([String].self, forKey: "tags"), openNow: try fields.boolIfPresent("openNow"),
                  at: try fields.decodeIfPresent(Date.self, forKey: "at"),
                  sort: try fields.decodeIfPresent(SearchSort.self, forKey: "sort"), limit: try fields.intIfPresent("limit"),
                  cursor: try fields.stringIfPresent("cursor"), lang: try fields.stringIfPresent("lang"),
                  highlight: try fields.boolIfPresent("highlight"))
    }
}

public struct NearestRequest: ValidatedBody, Equatable {
    public var lat: Double
    public var lon: Double
    public var k: Int
    public var q: String?
    public var kinds: [String]?
    public var maxDistance: Double?

    public init(lat: Double, lon: Double, k: Int, q: String? = nil, kinds: [String]? = nil, maxDistance: Double? = nil) {
        self.lat = lat
        self.lon = lon
        self.k = k
        self.q = q
        self.kinds = kinds
        self.maxDistance = maxDistance
    }

    public func validate() throws {
        try Check.latitude(lat)
        try Check.longitude(lon)
        try Check.range(k, field: "k", in: GeoRules.nearestK)
        try GeoRules.filters(q: q, kinds: kinds, tags: nil)
        if let maxDistance { try Check.range(maxDistance, field: "maxDistance", in: 1...GeoRules.maxDistance) }
    }
}

/// A box of latitudes and longitudes; `minLon > maxLon` means it crosses 180°.
public struct WithinRequest: ValidatedBody, Equatable {
    public var minLat: Double
    public var minLon: Double
    public var maxLat: Double
    public var maxLon: Double
    public var kinds: [String]?
    public var q: String?
    public var tags: [String]?
    public var openNow: Bool?
    public var limit: Int?
    public var cursor: String?
    /// False to leave out hits' `highlights` (where `q`'s words are in each title).
    public var highlight: Bool?

    public init(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double, kinds: [String]? = nil, q: String? = nil,
                tags: [String]? = nil, openNow: Bool? = nil, limit: Int? = nil, cursor: String? = nil, highlight: Bool? = nil) {
        self.minLat = minLat
        self.minLon = minLon
        self.maxLat = maxLat
        self.maxLon = maxLon
        self.kinds = kinds
        self.q = q
        self.tags = tags
        self.openNow = openNow
        self.limit = limit
        self.cursor = cursor
        self.highlight = highlight
    }

    public func validate() throws {
        try Check.latitude(minLat, field: "minLat")
        try Check.longitude(minLon, field: "minLon")
        try Check.latitude(maxLat, field: "maxLat")
        try Check.longitude(maxLon, field: "maxLon")
        guard minLat <= maxLat else { throw ServiceError.invalidArgument(field: "maxLat", "maxLat must not be below minLat") }
        try GeoRules.filters(q: q, kinds: kinds, tags: tags)
        _ = try Check.limit(limit, max: GeoRules.withinLimit, default: GeoRules.withinDefaultLimit)
        try GeoRules.cursor(cursor)
    }
}

/// One post found by geo: what a list or a map pin shows.
public struct Hit: Codable, Sendable, Equatable {
    public var id: String
    /// Metres from the centre; nil for `geo.within`.
    public var distance: Double?
    public var kind: String
    public var title: String
    public var lat: Double
    public var lon: Double
    public var tags: [String]
    public var ref: String?
    public var ownerId: String
    /// `open`, `closes_soon`, `closed`, `opens_soon`, `unknown`, `open_end`; nil for a post without hours.
    public var openStatus: String?
    /// When the status next changes (opens, closes, turns unknown), RFC 3339; nil
    /// without hours, or when it never changes (`24/7`) or not within three years.
    public var nextChange: String?
    /// The comment of the hours' rule that decides the status now (`"by appointment"`).
    public var hoursComment: String?
    public var rating: Rating
    /// Where the query's words are in the title; nil for a search without `q` (or
    /// with `highlight: false`).
    public var highlights: Highlights?

    public init(id: String, distance: Double?, kind: String, title: String, lat: Double, lon: Double, tags: [String],
                ref: String?, ownerId: String, openStatus: String?, nextChange: String? = nil, hoursComment: String? = nil,
                rating: Rating, highlights: Highlights? = nil) {
        self.id = id
        self.distance = distance
        self.kind = kind
        self.title = title
        self.lat = lat
        self.lon = lon
        self.tags = tags
        self.ref = ref
        self.ownerId = ownerId
        self.openStatus = openStatus
        self.nextChange = nextChange
        self.hoursComment = hoursComment
        self.rating = rating
        self.highlights = highlights
    }

    enum CodingKeys: String, CodingKey {
        case id, distance, kind, title, lat, lon, tags, ref, ownerId, openStatus, nextChange, hoursComment, rating, highlights
    }

    /// Every field is written, absent ones as `null` (as geo's own writer does).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(distance, forKey: .distance)
        try container.encode(kind, forKey: .kind)
        try container.encode(title, forKey: .title)
        try container.encode(lat, forKey: .lat)
        try container.encode(lon, forKey: .lon)
        try container.encode(tags, forKey: .tags)
        try container.encode(ref, forKey: .ref)
        try container.encode(ownerId, forKey: .ownerId)
        try container.encode(openStatus, forKey: .openStatus)
        try container.encode(nextChange, forKey: .nextChange)
        try container.encode(hoursComment, forKey: .hoursComment)
        try container.encode(rating, forKey: .rating)
        try container.encode(highlights, forKey: .highlights)
    }
}

/// Where a search's words are in a hit's fields (the title, so far).
public struct Highlights: Codable, Sendable, Equatable {
    /// The title's words that the query matched (whole, or starting with its last
    /// word), in order.
    public var title: [TextRange]

    public init(title: [TextRange]) { self.title = title }
}

/// A stretch of a string: its first UTF-16 code unit and how many, as JavaScript's
/// strings and `NSRange` count them.
public struct TextRange: Codable, Sendable, Equatable {
    public var start: Int
    public var length: Int

    public init(start: Int, length: Int) {
        self.start = start
        self.length = length
    }

    /// The range of `string` this covers; nil when it is out of bounds or splits a
    /// Unicode scalar.
    public func range(in string: String) -> Range<String.Index>? {
        let utf16 = string.utf16
        guard start >= 0, length >= 0, start + length <= utf16.count else { return nil }
        let lower = utf16.index(utf16.startIndex, offsetBy: start), upper = utf16.index(lower, offsetBy: length)
        guard let from = lower.samePosition(in: string.unicodeScalars), let to = upper.samePosition(in: string.unicodeScalars) else {
            return nil
        }
        return from..<to
    }
}

public struct SearchReply: Codable, Sendable, Equatable {
    public struct Center: Codable, Sendable, Equatable {
        public var lat: Double
        public var lon: Double
        /// The place the request named, as the gazetteer resolved it.
        public var place: Place?
        public init(lat: Double, lon: Double, place: Place? = nil) {
            self.lat = lat
            self.lon = lon
            self.place = place
        }
    }

    public var hits: [Hit]
    public var nextCursor: String?
    public var center: Center

    public init(hits: [Hit], nextCursor: String?, center: Center) {
        self.hits = hits
        self.nextCursor = nextCursor
        self.center = center
    }
}

public struct HitsReply: Codable, Sendable, Equatable {
    public var hits: [Hit]
    public var nextCursor: String?

    public init(hits: [Hit], nextCursor: String? = nil) {
        self.hits = hits
        self.nextCursor = nextCursor
    }
}

public struct GeoStats: Codable, Sendable, Equatable {
    public var posts: Int
    public var users: Int
    /// Changes announced by each followed feed (`catalogue`, `auth`) and not applied yet.
    public var lag: [String: Int64]
    /// The in-memory index's size, estimated.
    public var memoryBytes: Int
    /// Watches open (`geo.watch.open`).
    public var watches: Int

    public init(posts: Int, users: Int, lag: [String: Int64], memoryBytes: Int, watches: Int) {
        self.posts = posts
        self.users = users
        self.lag = lag
        self.memoryBytes = memoryBytes
        self.watches = watches
    }
}

/// `geo.users.near`: discoverable users whose home is within `radius` of a point.
public struct UsersNearRequest: ValidatedBody, Equatable {
    public var lat: Double?
    public var lon: Double?
    /// A place name instead of `lat` and `lon`, as in `geo.search`.
    public var place: String?
    public var radius: Double
    /// Attributes a user must have, each equal.
    public var attributes: Attributes?
    public var limit: Int?
    /// The language of `center.place`'s name (BCP 47); English when absent.
    public var lang: String?

    public init(lat: Double?, lon: Double?, place: String? = nil, radius: Double, attributes: Attributes? = nil,
                limit: Int? = nil, lang: String? = nil) {
        self.lat = lat
        self.lon = lon
        self.place = place
        self.radius = radius
        self.attributes = attributes
        self.limit = limit
        self.lang = lang
    }

    public func validate() throws {
        try GeoRules.center(lat: lat, lon: lon, place: place)
        try Check.range(radius, field: "radius", in: GeoRules.radius)
        try attributes?.validate()
        _ = try Check.limit(limit)
        _ = try Check.languageTag(lang)
    }
}

public struct NearUser: Codable, Sendable, Equatable {
    public var userId: String
    /// Metres, rounded up to the next multiple of 500 (at least 500).
    public var distance: Double

    public init(userId: String, distance: Double) {
        self.userId = userId
        self.distance = distance
    }
}

public struct UsersNearReply: Codable, Sendable, Equatable {
    public var users: [NearUser]
    /// The centre searched around, with the place when the request named one.
    public var center: SearchReply.Center

    public init(users: [NearUser], center: SearchReply.Center) {
        self.users = users
        self.center = center
    }
}
