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
    private let users: FeedUserSet

    init(in database: ServiceDatabase) throws {
        users = try FeedUserSet(table: "confirmed_email", in: database)
    }

    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("servicekit-confirmed-email") { db in
            try db.execute(sql: FeedUserSet.createTable("confirmed_email"))
        }
    }

    /// Records what `changes` say of addresses (the last word per user) in the
    /// transaction that applies them; it counts once that commits.
    func record(_ changes: [UserChange], in db: Database) throws {
        var latest: [String: Bool] = [:]
        for change in changes {
            latest[change.userId] = change.type == .updated && change.user?.emailVerified == true
        }
        try users.update(latest, in: db)
    }

    public func contains(_ userID: String) -> Bool {
        users.contains(userID)
    }

    /// The refusal of a registered user whose address is not confirmed.
    static let refusal = ServiceError.permissionDenied(
        "confirm your email address first: open the link mailed to it (POST /v1/auth/email/verify/resend sends another); this server requires it for writes")
}
