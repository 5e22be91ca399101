import Foundation
import GRDB
import Synchronization

/// Users a service marks from auth's feed (`DeletedUsers`, `ConfirmedEmails`): one
/// table of ids in the service's own file, and the same set in memory, loaded at start,
/// so a check on every request reads no database.
final class FeedUserSet: Sendable {
    private let table: String
    private let users: Mutex<Set<String>>

    init(table: String, in database: ServiceDatabase) throws {
        self.table = table
        users = Mutex(try database.pool.read { db in Set(try String.fetchAll(db, sql: "SELECT user_id FROM \(table)")) })
    }

    /// The table's `CREATE` (for a migration of the set's owner).
    static func createTable(_ table: String) -> String {
        "CREATE TABLE IF NOT EXISTS \(table) (user_id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID"
    }

    /// Puts users in (true) or takes them out (false) in the caller's transaction; the
    /// set in memory follows once it commits.
    func update(_ members: [String: Bool], in db: Database) throws {
        guard !members.isEmpty else { return }
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO \(table) (user_id) VALUES (?)")
        let delete = try db.cachedStatement(sql: "DELETE FROM \(table) WHERE user_id = ?")
        for (user, member) in members { try (member ? insert : delete).execute(arguments: [user]) }
        db.afterNextTransaction { [self] _ in
            users.withLock { users in
                for (user, member) in members {
                    if member { users.insert(user) } else { users.remove(user) }
                }
            }
        }
    }

    func contains(_ userID: String) -> Bool {
        users.withLock { $0.contains(userID) }
    }
}
