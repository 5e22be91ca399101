import Contracts
import Foundation
import GRDB
import Wire

extension CatalogueStore {
    /// Whether auth's feed has told of this user (and not of their deletion).
    func isKnownUser(_ id: String) throws -> Bool {
        try database.pool.read { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM known_user WHERE user_id = ?)", arguments: [id]) ?? false
        }
    }

    /// The users catalogue holds anything of, for the end of a replay of auth's feed.
    func heldUserIds(in db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT user_id FROM known_user UNION SELECT owner_id FROM post")
    }

    /// Applies a batch of `auth.changes`, inside the follower's transaction: known
    /// users are recorded; a deleted user's posts, ratings, trips and memberships
    /// go, each post deletion and each rating change on catalogue's own feed.
    func apply(_ changes: [UserChange], now: Date, in db: Database) throws {
        for change in changes {
            switch change.type {
            case .updated:
                try db.execute(sql: "INSERT OR IGNORE INTO known_user (user_id) VALUES (?)", arguments: [change.userId])
            case .deleted:
                try removeUser(change.userId, now: now, in: db)
            }
        }
    }

    private func removeUser(_ user: String, now: Date, in db: Database) throws {
        for postID in try String.fetchAll(db, sql: "SELECT id FROM post WHERE owner_id = ?", arguments: [user]) {
            try deletePost(id: postID, in: db)
        }
        let rated = try String.fetchAll(db, sql: "SELECT post_id FROM rating WHERE user_id = ?", arguments: [user])
        try db.execute(sql: "DELETE FROM rating WHERE user_id = ?", arguments: [user])
        for postID in rated {
            guard var post = try post(id: postID, in: db) else { continue }
            post.rating = try rating(ofPost: postID, in: db)
            _ = try savePost(post, in: db)
        }
        try db.execute(sql: "DELETE FROM trip WHERE owner_id = ?", arguments: [user])
        try db.execute(sql: "DELETE FROM trip_member WHERE user_id = ?", arguments: [user])
        try db.execute(sql: "DELETE FROM known_user WHERE user_id = ?", arguments: [user])
    }
}
