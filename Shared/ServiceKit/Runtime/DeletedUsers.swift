import Contracts
import Foundation
import GRDB
import Synchronization
import Wire

/// The users auth's feed reported deleted: their tokens are refused at once, on
/// every thread, without a database read. Kept in the service's own file (the
/// `deleted_user` table, which this owns) and in memory, loaded at start.
public final class DeletedUsers: Sendable {
    private let users: Mutex<Set<String>>

    /// The users `database` has recorded deleted.
    init(in database: ServiceDatabase) throws {
        users = Mutex(try database.pool.read { db in Set(try String.fetchAll(db, sql: "SELECT user_id FROM deleted_user")) })
    }

    /// The table, for a service that follows `auth.changes`; registered after the
    /// service's own migrations (catalogue's, favourites' and geo's made it
    /// themselves before ServiceKit did, chat's copied its users marked deleted).
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("servicekit-deleted-user") { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS deleted_user (user_id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID")
        }
    }

    /// Records the deleted among `changes` in the transaction that applies them; they
    /// are refused once it commits.
    func record(_ changes: [UserChange], in db: Database) throws {
        let deleted = changes.filter { $0.type == .deleted }.map(\.userId)
        guard !deleted.isEmpty else { return }
        for user in deleted {
            try db.cachedStatement(sql: "INSERT OR IGNORE INTO deleted_user (user_id) VALUES (?)").execute(arguments: [user])
        }
        db.afterNextTransaction { [self] _ in insert(deleted) }
    }

    private func insert(_ ids: [String]) {
        users.withLock { $0.formUnion(ids) }
    }

    public var check: CallerCheck {
        CallerCheck(readsDatabase: false) { [self] caller in
            if users.withLock({ $0.contains(caller.userID) }) {
                throw ServiceError.unauthenticated("this account was deleted")
            }
        }
    }
}
