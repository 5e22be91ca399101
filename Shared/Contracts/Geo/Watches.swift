import Foundation
import Wire

/// Standing queries: a search that stays open and reports what enters, changes and
/// leaves it (`geo.watch.open`, `geo.watch.renew`, `geo.watch.close`; events on
/// `GeoAPI.watchTopic(userId:)`).
extension GeoAPI {
    public static let watchOpen = Op<WatchOpenRequest, WatchOpenReply>("geo.watch.open", access: .user, effect: .read)
    public static let watchRenew = Op<WatchRequest, WatchReply>("geo.watch.renew", access: .user, effect: .read)
    public static let watchClose = Op<WatchRequest, Empty>("geo.watch.close", access: .user, effect: .read)

    /// The PUB topic of one user's watches (body: `WatchEvent`, naming its watch).
    public static func watchTopic(userId: String) -> String { watchTopicPrefix + userId + "/" }
    public static let watchTopicPrefix = "geo.watch/"
}

extension GeoRules {
    /// The longest lease a watch gets, and the one it gets when none is asked for:
    /// a client that vanishes costs nothing for longer than this.
    public static let watchLease = 600
    /// Watches one user may hold at once.
    public static let watchesPerUser = 50
    /// Watches the service holds at once, unless `GEO_MAX_WATCHES` says otherwise.
    public static let maxWatches = 200_000
}

/// `geo.watch.open`: exactly one of `search` (a circle around a point or a place),
/// `within` (a box) — each the body of the one-shot op, without `cursor` or `at` (a
/// watch is about now) — and, optionally, the lease in seconds.
public struct WatchOpenRequest: ValidatedBody, Equatable {
    public var search: SearchRequest?
    public var within: WithinRequest?
    /// Seconds until the watch ends unless renewed: 10–600, default 600.
    public var lease: Int?

    public init(search: SearchRequest? = nil, within: WithinRequest? = nil, lease: Int? = nil) {
        self.search = search
        self.within = within
        self.lease = lease
    }

    public func validate() throws {
        switch (search, within) {
        case (let search?, nil):
            try Check.member("search", search.validate)
            if search.cursor != nil {
                throw ServiceError.invalidArgument(field: "search.cursor", "a watch starts at the first page: leave cursor out")
            }
            if search.at != nil {
                throw ServiceError.invalidArgument(field: "search.at", "a watch follows the present: leave at out")
            }
        case (nil, let within?):
            try Check.member("within", within.validate)
            if within.cursor != nil {
                throw ServiceError.invalidArgument(field: "within.cursor", "a watch starts at the first page: leave cursor out")
            }
        case (nil, nil):
            throw ServiceError.invalidArgument(field: "search", "give the query to watch as search or within")
        case (.some, .some):
            throw ServiceError.invalidArgument(field: "within", "give search or within, not both")
        }
        if let lease { try Check.range(lease, field: "lease", in: 10...GeoRules.watchLease) }
    }
}

/// A watch as its owner sees it.
public struct WatchInfo: Codable, Sendable, Equatable {
    public var id: String
    /// When it ends unless renewed before.
    public var expiresAt: Date
    /// Where its events are published (the owner's topic; each event names the watch).
    public var topic: String

    public init(id: String, expiresAt: Date, topic: String) {
        self.id = id
        self.expiresAt = expiresAt
        self.topic = topic
    }
}

/// The watch and its first page: `hits` and `nextCursor` as the one-shot op gives
/// them (`center` too for `search`). Later pages come from that op with the cursor.
public struct WatchOpenReply: Codable, Sendable, Equatable {
    public var watch: WatchInfo
    public var hits: [Hit]
    public var nextCursor: String?
    public var center: SearchReply.Center?

    public init(watch: WatchInfo, hits: [Hit], nextCursor: String?, center: SearchReply.Center?) {
        self.watch = watch
        self.hits = hits
        self.nextCursor = nextCursor
        self.center = center
    }
}

/// `geo.watch.renew` and `geo.watch.close`: one of the caller's watches.
public struct WatchRequest: ValidatedBody, Equatable {
    public var id: String
    /// For `renew`: seconds from now, 10–600, default 600.
    public var lease: Int?

    public init(id: String, lease: Int? = nil) {
        self.id = id
        self.lease = lease
    }

    public func validate() throws {
        try Check.length(id, field: "id", in: 1...64)
        if let lease { try Check.range(lease, field: "lease", in: 10...GeoRules.watchLease) }
    }
}

public struct WatchReply: Codable, Sendable, Equatable {
    public var watch: WatchInfo

    public init(watch: WatchInfo) {
        self.watch = watch
    }
}

/// One event of a watch, published after the change it reports is committed.
///
/// For each change geo applies, in order, each watch it touches gets at most one:
/// `entered` (the post matches now and did not), `changed` (it matched and still
/// does, and its hit is different), `left` (it matched and does not now: moved out,
/// edited, deleted, or closed for an `openNow` watch); `expired` ends a watch whose
/// lease ran out. `seq` counts a watch's events from 1: a gap means events were lost
/// (a subscriber too slow for its queue) and the watch should be opened again.
public struct WatchEvent: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable, StringEnum {
        case entered, changed, left, expired
    }

    public var type: Kind
    public var watchId: String
    public var seq: Int
    /// The post's hit as the watch's one-shot op gives it (`entered`, `changed`).
    public var hit: Hit?
    /// The post that left.
    public var postId: String?

    public init(type: Kind, watchId: String, seq: Int, hit: Hit? = nil, postId: String? = nil) {
        self.type = type
        self.watchId = watchId
        self.seq = seq
        self.hit = hit
        self.postId = postId
    }
}
