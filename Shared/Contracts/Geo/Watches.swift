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

/// `geo.watch.open`: exactly one of `search` (posts in a circle around a point or a
/// place), `within` (posts in a box) — each the body of the one-shot op, without
/// `cursor` or `at` (a watch is about now) — or `usersNear` (people, the body of
/// `geo.users.near`); and, optionally, the lease in seconds.
public struct WatchOpenRequest: ValidatedBody, Equatable {
    public var search: SearchRequest?
    public var within: WithinRequest?
    public var usersNear: UsersNearRequest?
    /// Seconds until the watch ends unless renewed: 10–600, default 600.
    public var lease: Int?

    public init(search: SearchRequest? = nil, within: WithinRequest? = nil, usersNear: UsersNearRequest? = nil, lease: Int? = nil) {
        self.search = search
        self.within = within
        self.usersNear = usersNear
        self.lease = lease
    }

    public func validate() throws {
        let given = [search.map { _ in "search" }, within.map { _ in "within" }, usersNear.map { _ in "usersNear" }].compactMap { $0 }
        guard given.count == 1 else {
            throw ServiceError.invalidArgument(field: given.last ?? "search",
                                               given.isEmpty ? "give the query to watch as search, within or usersNear"
                                                   : "give one of search, within and usersNear, not \(given.joined(separator: " and "))")
        }
        if let usersNear {
            try Check.member("usersNear", usersNear.validate)
        }
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
        default:
            break
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
    /// The events published for it so far (the `seq` of the latest). A subscriber
    /// that has seen fewer, a moment after `renew` says so, lost some: events travel
    /// PUB/SUB, and a gap after the last one shows in no later `seq`.
    public var seq: Int

    public init(id: String, expiresAt: Date, topic: String, seq: Int = 0) {
        self.id = id
        self.expiresAt = expiresAt
        self.topic = topic
        self.seq = seq
    }
}

/// The watch and its first page as the one-shot op gives it: `hits` and
/// `nextCursor` for `search` and `within` (later pages come from that op with the
/// cursor), `users` for `usersNear`; `center` for `search` and `usersNear`.
public struct WatchOpenReply: Codable, Sendable, Equatable {
    public var watch: WatchInfo
    public var hits: [Hit]?
    public var nextCursor: String?
    public var users: [NearUser]?
    public var center: SearchReply.Center?

    public init(watch: WatchInfo, hits: [Hit]? = nil, nextCursor: String? = nil, users: [NearUser]? = nil,
                center: SearchReply.Center?) {
        self.watch = watch
        self.hits = hits
        self.nextCursor = nextCursor
        self.users = users
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
/// Posts: for each change geo applies, in order, each watch it touches gets at most
/// one: `entered` (the post matches now and did not; `hit`), `changed` (it matched
/// and still does, and its hit is different; `hit`), `left` (it matched and does
/// not now: moved out, edited, deleted, or closed for an `openNow` watch; `postId`).
/// People: after each batch of homes, a `usersNear` watch it touches gets the
/// difference between the list its owner holds and the one `geo.users.near` gives
/// now: `left` (`userId`), then `changed` (another distance band; `user`), then
/// `entered` (`user`). `expired` ends a watch whose lease ran out. `seq` counts a
/// watch's events from 1: a gap means events were lost (a subscriber too slow for
/// its queue) and the watch should be opened again.
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
    /// The user as `geo.users.near` gives them (`entered`, `changed` of a `usersNear` watch).
    public var user: NearUser?
    /// The user who left a `usersNear` watch.
    public var userId: String?

    public init(type: Kind, watchId: String, seq: Int, hit: Hit? = nil, postId: String? = nil, user: NearUser? = nil,
                userId: String? = nil) {
        self.type = type
        self.watchId = watchId
        self.seq = seq
        self.hit = hit
        self.postId = postId
        self.user = user
        self.userId = userId
    }
}
