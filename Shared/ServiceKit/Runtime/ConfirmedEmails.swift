import Contracts
import Foundation
import GRDB
import Synchronization
import Wire

/// The users whose address auth's feed reported confirmed (`FeedUser.emailVerified`),
/// for `HEREABOUTS_REQUIRE_VERIFIED_EMAIL=writes`: kept in the service's own file (the
/// `confirmed_email` table, which this owns) and in memory, so the check reads no
/// database. A user's entry follows the feed: confirmed, unconfirmed again (a new
/// address), deleted.
public final class ConfirmedEmails: Sendable {
    private let users: Mutex<Set<String>>

    init(in database: ServiceDatabase) throws {
        users = Mutex(try database.pool.read { db in Set(try String.fetchAll(db, sql: "SELECT user_id FROM confirmed_email")) })
    }

    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("servicekit-confirmed-email") { db in
            try db.execute(sql: "CREATE TABLE IF NOT EXISTS confirmed_email (user_id TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID")
        }
    }

    /// Records what `changes` say of addresses in the transaction that applies them;
    /// it counts once that commits.
    func record(_ changes: [UserChange], in db: Database) throws {
        var latest: [String: Bool] = [:]
        for change in changes {
            latest[change.userId] = change.type == .updated && change.user?.emailVerified == true
        }
        guard !latest.isEmpty else { return }
        for (user, confirmed) in latest {
            try db.cachedStatement(sql: confirmed ? "INSERT OR IGNORE INTO confirmed_email (user_id) VALUES (?)"
                                                  : "DELETE FROM confirmed_email WHERE user_id = ?").execute(arguments: [user])
        }
        db.afterNextTransaction { [self, latest] _ in
            users.withLock { users in
                for (user, confirmed) in latest {
                    if confirmed { users.insert(user) } else { users.remove(user) }
                }
            }
        }
    }

    public func contains(_ userID: String) -> Bool {
        users.withLock { $0.contains(userID) }
    }

    /// The refusal of a registered user whose address is not confirmed.
    static let refusal = ServiceError.permissionDenied(
        "confirm your email address first: open the link mailed to it (POST /v1/auth/email/verify/resend sends another); this server requires it for writes")
}
