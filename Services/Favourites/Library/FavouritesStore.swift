import Contracts
import Foundation
import GRDB
import ServiceKit
import Wire

/// All of favourites' SQL.
struct FavouritesStore: Sendable {
    let database: ServiceDatabase

    // MARK: Following

    /// Applies a batch of `catalogue.changes`: known posts come and go, and a
    /// deleted post leaves every list.
    func apply(_ changes: [PostChange], in db: Database) throws {
        let known = try db.cachedStatement(sql: "INSERT OR IGNORE INTO known_post (id) VALUES (?)")
        let forget = try db.cachedStatement(sql: "DELETE FROM known_post WHERE id = ?")
        let unsave = try db.cachedStatement(sql: "DELETE FROM favourite WHERE post_id = ?")
        for change in changes {
            switch change.type {
            case .upserted:
                try known.execute(arguments: [change.postId])
            case .deleted:
                try forget.execute(arguments: [change.postId])
                try unsave.execute(arguments: [change.postId])
            }
        }
    }

    /// Applies a batch of `auth.changes`: a deleted user's list goes.
    func apply(_ changes: [UserChange], in db: Database) throws {
        for change in changes where change.type == .deleted {
            try db.cachedStatement(sql: "DELETE FROM favourite WHERE user_id = ?").execute(arguments: [change.userId])
        }
    }

    /// The posts favourites knows or has saved, for the end of a replay of catalogue's feed.
    func heldPostIds(in db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT id FROM known_post UNION SELECT post_id FROM favourite")
    }

    /// The users with a list, for the end of a replay of auth's feed.
    func heldUserIds(in db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT DISTINCT user_id FROM favourite")
    }

    // MARK: Lists

    /// Saves `postId` for `userId` (once: saving it again changes nothing); returns
    /// the list's size.
    func add(_ postId: String, for userId: String, at instant: Date, in db: Database) throws -> Int {
        let saved = try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM favourite WHERE user_id = ? AND post_id = ?"),
                                      arguments: [userId, postId]) ?? false
        if !saved {
            let known = try db.cachedStatement(sql: "SELECT 1 FROM known_post WHERE id = ?")
            guard try Bool.fetchOne(known, arguments: [postId]) ?? false else {
                throw ServiceError(code: .notFound, message: "no post \(postId)", field: "postId")
            }
            let count = try count(of: userId, in: db)
            guard count < FavouriteRules.maxPerUser else {
                throw ServiceError.tooLarge("a list holds at most \(FavouriteRules.maxPerUser) favourites; remove one first")
            }
            let statement = try db.cachedStatement(sql: "INSERT INTO favourite (user_id, post_id, added_at) VALUES (?, ?, ?)")
            try statement.execute(arguments: [userId, postId, instant.timeIntervalSince1970])
            return count + 1
        }
        return try count(of: userId, in: db)
    }

    /// Forgets `postId` for `userId` (nothing when it was not saved); returns the list's size.
    func remove(_ postId: String, for userId: String, in db: Database) throws -> Int {
        try db.cachedStatement(sql: "DELETE FROM favourite WHERE user_id = ? AND post_id = ?").execute(arguments: [userId, postId])
        return try count(of: userId, in: db)
    }

    struct Page {
        var items: [FavouriteItem]
        var total: Int
        /// The seq of the last item, when more follow.
        var nextBefore: Int64?
    }

    /// Newest first, those saved before `before` (a seq) when given.
    func list(of userId: String, limit: Int, before: Int64?) throws -> Page {
        try database.pool.read { db in
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT seq, post_id, added_at FROM favourite
                WHERE user_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?
                """), arguments: [userId, before ?? .max, limit + 1])
            let items = rows.prefix(limit).map { FavouriteItem(postId: $0[1], addedAt: Date(timeIntervalSince1970: $0[2])) }
            let next: Int64? = rows.count > limit ? rows[limit - 1][0] : nil
            return Page(items: Array(items), total: try count(of: userId, in: db), nextBefore: next)
        }
    }

    /// Which of `postIds` `userId` has saved.
    func saved(_ postIds: [String], by userId: String) throws -> Set<String> {
        guard !postIds.isEmpty else { return [] }
        return try database.pool.read { db in
            let marks = databaseQuestionMarks(count: postIds.count)
            let saved = try db.cachedStatement(sql: "SELECT post_id FROM favourite WHERE user_id = ? AND post_id IN (\(marks))")
            return Set(try String.fetchAll(saved, arguments: StatementArguments([userId] + postIds)))
        }
    }

    private func count(of userId: String, in db: Database) throws -> Int {
        try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM favourite WHERE user_id = ?"), arguments: [userId]) ?? 0
    }
}
