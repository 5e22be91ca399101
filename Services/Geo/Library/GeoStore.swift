import Contracts
import Foundation
import GRDB
import ServiceKit
import Wire

/// All of geo's SQL.
struct GeoStore: Sendable {
    let database: ServiceDatabase
    private static let tagSeparator: Character = "\u{1F}"

    /// What a batch of `catalogue.changes` did, for the in-memory indexes and events.
    struct AppliedPosts {
        var changes: [PostIndex.Change] = []
        /// Users let out of fences that went away: (user, fence post id).
        var fencesLeft: [(userId: String, postId: String)] = []
    }

    /// Applies a batch of `catalogue.changes` to the post table, inside the
    /// follower's transaction. `wasFence` tells which posts were fences before the
    /// batch: only those can have users inside to let out when they stop being one.
    func apply(_ changes: [PostChange], wasFence: (String) -> Bool, in db: Database) throws -> AppliedPosts {
        var applied = AppliedPosts()
        applied.changes.reserveCapacity(changes.count)
        let letOut = try db.cachedStatement(sql: "DELETE FROM fence_inside WHERE post_id = ? RETURNING user_id")
        func endFence(_ postId: String) throws {
            guard wasFence(postId) else { return }
            let users = try String.fetchAll(letOut, arguments: [postId])
            applied.fencesLeft += users.map { ($0, postId) }
        }
        let upsert = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO post (id, owner_id, kind, title, text, lat, lon, category, tags, ref, hours, timezone,
                                         notify_radius, rating_average, rating_count, created_at, changed_seq)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        let delete = try db.cachedStatement(sql: "DELETE FROM post WHERE id = ?")
        let gone = try db.cachedStatement(sql: "INSERT OR REPLACE INTO post_gone (id, seq) VALUES (?, ?)")
        for change in changes {
            switch change.type {
            case .upserted:
                guard let post = change.post else { continue }
                let indexed = IndexedPost(post)
                try upsert.execute(arguments: [
                    indexed.id, indexed.ownerId, indexed.kind, indexed.title, indexed.text, indexed.lat, indexed.lon,
                    indexed.category, indexed.tags.joined(separator: String(Self.tagSeparator)), indexed.ref, indexed.hours,
                    indexed.timezone, indexed.notifyRadius, indexed.rating.average, indexed.rating.count,
                    indexed.createdAt.timeIntervalSince1970, change.seq,
                ])
                if indexed.notifyRadius == nil { try endFence(indexed.id) }
                applied.changes.append(.upsert(indexed))
            case .deleted:
                try delete.execute(arguments: [change.postId])
                try gone.execute(arguments: [change.postId, change.seq])
                try endFence(change.postId)
                applied.changes.append(.delete(change.postId))
            }
        }
        return applied
    }

    // MARK: Fences

    /// The fences `userId` was in after their last update.
    func fencesInside(of userId: String, in db: Database) throws -> Set<String> {
        Set(try String.fetchAll(db.cachedStatement(sql: "SELECT post_id FROM fence_inside WHERE user_id = ?"), arguments: [userId]))
    }

    func recordCrossing(of userId: String, _ crossing: FenceCrossing, at instant: Date, in db: Database) throws {
        let enter = try db.cachedStatement(sql: "INSERT OR IGNORE INTO fence_inside (user_id, post_id, entered_at) VALUES (?, ?, ?)")
        for postId in crossing.entered {
            try enter.execute(arguments: [userId, postId, instant.timeIntervalSince1970])
        }
        let leave = try db.cachedStatement(sql: "DELETE FROM fence_inside WHERE user_id = ? AND post_id = ?")
        for postId in crossing.exited {
            try leave.execute(arguments: [userId, postId])
        }
    }

    // MARK: The index's snapshot

    /// What an index snapshot names as the database it was of: this file's id and
    /// the epoch of its catalogue cursor (a restored backup's is its own).
    func snapshotStamp() throws -> String {
        try database.pool.read { db in
            let id = try String.fetchOne(db, sql: "SELECT id FROM database_identity") ?? ""
            return "\(id) \(try FeedCursor.epoch(CatalogueAPI.service, in: db) ?? "")"
        }
    }

    /// Where this file stands in catalogue's feed.
    func feedPosition() throws -> Int64 {
        try database.pool.read { db in try FeedCursor.seq(CatalogueAPI.service, in: db) }
    }

    /// How many posts changed or went after feed position `seq`.
    func changeCount(after seq: Int64) throws -> Int {
        try database.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT (SELECT count(*) FROM post WHERE changed_seq > ?1) + (SELECT count(*) FROM post_gone WHERE seq > ?1)",
                             arguments: [seq]) ?? 0
        }
    }

    /// What changed after feed position `seq`, as changes to the index: the posts
    /// gone first, then those changed, as they are now (a post deleted and made
    /// again, in a replay, ends up there).
    func changes(after seq: Int64) throws -> [PostIndex.Change] {
        var changes = try database.pool.read { db in
            try String.fetchAll(db, sql: "SELECT id FROM post_gone WHERE seq > ?", arguments: [seq]).map(PostIndex.Change.delete)
        }
        try forEachPost(where: "WHERE changed_seq > ?", arguments: [seq]) { changes.append(.upsert($0)) }
        return changes
    }

    /// Forgets the deletions a snapshot now holds.
    func forgetGone(through seq: Int64) throws {
        try database.pool.write { db in try db.execute(sql: "DELETE FROM post_gone WHERE seq <= ?", arguments: [seq]) }
    }

    /// How many posts are stored (SQLite counts them from the id index: ~20 ms a million).
    func postCount() throws -> Int {
        try database.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM post") ?? 0 }
    }

    /// Calls `body` with every stored post, streaming (a million do not sit in memory at once).
    func forEachPost(_ body: (IndexedPost) throws -> Void) throws {
        try forEachPost(where: "", body)
    }

    /// The posts that notify users nearby (a fence each).
    func fencePosts() throws -> [IndexedPost] {
        var posts: [IndexedPost] = []
        try forEachPost(where: "WHERE notify_radius IS NOT NULL") { posts.append($0) }
        return posts
    }

    private func forEachPost(where condition: String, arguments: StatementArguments = [],
                             _ body: (IndexedPost) throws -> Void) throws {
        try database.pool.read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT id, owner_id, kind, title, text, lat, lon, category, tags, ref, hours, timezone, notify_radius,
                       rating_average, rating_count, created_at
                FROM post \(condition)
                """, arguments: arguments)
            while let row = try rows.next() {
                let tags: String = row[8]
                let draft = PostDraft(
                    kind: row[2], title: row[3], text: row[4], lat: row[5], lon: row[6], category: row[7],
                    tags: tags.isEmpty ? [] : tags.split(separator: Self.tagSeparator).map(String.init),
                    hours: row[10], timezone: row[11], notifyRadius: row[12], ref: row[9])
                try body(IndexedPost(id: row[0], ownerId: row[1], draft: draft, rating: Rating(average: row[13], count: row[14]),
                                     createdAt: Date(timeIntervalSince1970: row[15])))
            }
        }
    }

    /// Applies a batch of `auth.changes` to the homes table: a discoverable location
    /// is kept, anything else (private, none, deleted user) removed.
    func apply(_ changes: [UserChange], in db: Database) throws -> [UserIndex.Change] {
        var applied: [UserIndex.Change] = []
        for change in changes {
            if change.type == .updated, let user = change.user, let location = user.location, location.discoverable {
                let attributes = String(decoding: try JSONValueEncoder().encodeData(user.profile.attributes, sortsKeys: true), as: UTF8.self)
                // Auth sends homes snapped; an entry it wrote before it did is snapped here.
                let home = HomeGrid.snap(lat: location.lat, lon: location.lon)
                try db.execute(sql: "INSERT OR REPLACE INTO user_home (user_id, lat, lon, attributes) VALUES (?, ?, ?, ?)",
                               arguments: [change.userId, home.lat, home.lon, attributes])
                applied.append(.set(UserIndex.Home(userId: change.userId, lat: home.lat, lon: home.lon,
                                                   attributes: user.profile.attributes)))
            } else {
                try db.execute(sql: "DELETE FROM user_home WHERE user_id = ?", arguments: [change.userId])
                applied.append(.remove(change.userId))
            }
            if change.type == .deleted {
                try db.execute(sql: "DELETE FROM fence_inside WHERE user_id = ?", arguments: [change.userId])
            }
        }
        return applied
    }

    /// The posts geo indexes, for the end of a replay of catalogue's feed.
    func heldPostIds(in db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT id FROM post")
    }

    /// The users geo holds a home or a fence crossing of, for the end of a replay of auth's feed.
    func heldUserIds(in db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT user_id FROM user_home UNION SELECT user_id FROM fence_inside")
    }

    func homes() throws -> [UserIndex.Home] {
        try database.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT user_id, lat, lon, attributes FROM user_home").map { row in
                let attributes: String = row[3]
                return UserIndex.Home(userId: row[0], lat: row[1], lon: row[2],
                                      attributes: try JSONValueDecoder().decode(Attributes.self, from: Data(attributes.utf8)))
            }
        }
    }
}
