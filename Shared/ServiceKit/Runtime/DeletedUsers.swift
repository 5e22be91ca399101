import Contracts
import Foundation
import GRDB
import Synchronization
import Wire

/// The users auth's feed reported deleted: their tokens are refused at once, on
/// every thread, without a database read. Kept in the service's own file (the
/// `deleted_user` table, which this owns) and in memory, loaded at start.
public final class DeletedUsers: Sendable {
    private let users: FeedUserSet

    /// The users `database` has recorded deleted.
    init(in database: ServiceDatabase) throws {
        users = try FeedUserSet(table: "deleted_user", in: database)
    }

    /// The table, for a service that follows `auth.changes`; registered after the
    /// service's own migrations (catalogue's, favourites' and geo's made it
    /// themselves before ServiceKit did, chat's copied its users marked deleted).
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("servicekit-deleted-user") { db in
            try db.execute(sql: FeedUserSet.createTable("deleted_user"))
        }
    }

    /// Records the deleted among `changes` in the transaction that applies them; they
    /// are refused once it commits.
    func record(_ changes: [UserChange], in db: Database) throws {
        try users.update(Dictionary(changes.filter { $0.type == .deleted }.map { ($0.userId, true) }) { first, _ in first }, in: db)
    }

    public var check: CallerCheck {
        CallerCheck(readsDatabase: false) { [self] caller in
            if users.contains(caller.userID) {
                throw ServiceError.unauthenticated("this account was deleted")
            }
        }
    }
}
