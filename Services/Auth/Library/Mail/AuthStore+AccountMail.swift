import Contracts
import Foundation
import GRDB
import Mail
import ServiceKit
import Wire

/// What a mailed link's token was made for.
enum MailTokenPurpose: String, Sendable {
    /// The account's current address.
    case verify
    /// A new address (`email`), which becomes the account's when confirmed.
    case change
    /// A forgotten password.
    case reset
}

/// A token that was redeemed: whose, for what, and the address it was mailed to.
struct RedeemedToken: Sendable {
    var purpose: MailTokenPurpose
    var userID: String
    var email: String
}

/// A message of the outbox, due to be tried.
struct QueuedMail: Sendable {
    var id: Int64
    var message: MailMessage
    var attempts: Int
    var createdAt: Date
}

/// Auth's SQL for account mail: link tokens, the mail outbox and its budgets, and the
/// queue of forgotten-password requests.
extension AuthStore {
    /// Mails one address may be sent in `budgetWindow` (registrations, resends, resets,
    /// changes together), so that auth is never a way to flood someone's mailbox.
    static let mailsPerAddress = 5
    static let budgetWindow: TimeInterval = 3600

    // MARK: Tokens

    /// A new token for `userID`'s link; earlier unused tokens of the same purpose stop
    /// working (only the newest mail's link does).
    func issueMailToken(_ purpose: MailTokenPurpose, userID: String, email: String, lifetime: TimeInterval, now: Date,
                        in db: Database) throws -> String {
        try db.execute(sql: "UPDATE mail_token SET used_at = ? WHERE user_id = ? AND purpose = ? AND used_at IS NULL",
                       arguments: [now.timeIntervalSince1970, userID, purpose.rawValue])
        let token = Identifier.random(count: 32)
        try db.execute(sql: """
            INSERT INTO mail_token (token_hash, purpose, user_id, email, expires_at) VALUES (?, ?, ?, ?, ?)
            """, arguments: [Self.hash(token), purpose.rawValue, userID, email, now.addingTimeInterval(lifetime).timeIntervalSince1970])
        return token
    }

    /// Spends a token of one of `purposes`; nil when it is unknown, spent, expired, or
    /// made for something else (each answered alike: the caller cannot tell them apart).
    func redeem(token: String, purposes: Set<MailTokenPurpose>, now: Date, in db: Database) throws -> RedeemedToken? {
        let hash = Self.hash(token)
        guard let row = try Row.fetchOne(db, sql: """
            SELECT purpose, user_id, email, expires_at, used_at FROM mail_token WHERE token_hash = ?
            """, arguments: [hash]),
            let purpose = MailTokenPurpose(rawValue: row["purpose"]), purposes.contains(purpose),
            row["used_at"] as Double? == nil, (row["expires_at"] as Double) > now.timeIntervalSince1970 else { return nil }
        try db.execute(sql: "UPDATE mail_token SET used_at = ? WHERE token_hash = ?", arguments: [now.timeIntervalSince1970, hash])
        return RedeemedToken(purpose: purpose, userID: row["user_id"], email: row["email"])
    }

    // MARK: Addresses

    /// Marks the account's address confirmed, if it is still `email`; nil otherwise.
    func confirmEmail(userID: String, email: String, now: Date, in db: Database) throws -> User? {
        guard let record = try Self.record(where: "id = ?", [userID], in: db),
              record.emailKey == email.lowercased() else { return nil }
        return try modifyUser(userID, now: now, in: db) { $0.emailVerified = true }
    }

    /// Makes `email` the account's address, confirmed. Throws `already_exists` when
    /// another account took it in the meantime.
    func adoptEmail(userID: String, email: String, now: Date, in db: Database) throws -> User {
        try Self.mapUniqueness {
            try modifyUser(userID, now: now, in: db) { record in
                record.email = email
                record.emailKey = email.lowercased()
                record.emailVerified = true
                record.pendingEmail = nil
            }
        }
    }

    func setPendingEmail(userID: String, _ email: String?, now: Date, in db: Database) throws {
        _ = try modifyUser(userID, now: now, in: db) { $0.pendingEmail = email }
    }

    /// Ends every session of the user (a password reset: whoever else is signed in is out).
    func revokeAllSessions(userID: String, reason: String, now: Date, in db: Database) throws {
        try db.execute(sql: "UPDATE session SET revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND revoked_at IS NULL",
                       arguments: [now.timeIntervalSince1970, reason, userID])
    }

    /// The account with a password that has this address, with its display name and language.
    func accountForMail(emailKey: String, in db: Database) throws -> UserRecord? {
        try Self.record(where: "email_key = ? AND password_hash IS NOT NULL AND anonymous = 0", [emailKey], in: db)
    }

    // MARK: Outbox

    /// Seconds until `recipient` may be mailed again, or nil when its budget has room.
    func mailBudgetWait(recipient: String, now: Date, in db: Database) throws -> TimeInterval? {
        let since = now.addingTimeInterval(-Self.budgetWindow).timeIntervalSince1970
        let times = try Double.fetchAll(db.cachedStatement(sql: """
            SELECT created_at FROM mail_outbox WHERE recipient_key = ? AND created_at >= ? ORDER BY created_at DESC LIMIT ?
            """), arguments: [recipient.lowercased(), since, Self.mailsPerAddress])
        guard times.count >= Self.mailsPerAddress, let oldest = times.last else { return nil }
        return oldest + Self.budgetWindow - now.timeIntervalSince1970
    }

    func mailBudgetWait(recipient: String, now: Date) throws -> TimeInterval? {
        try database.pool.read { db in try mailBudgetWait(recipient: recipient, now: now, in: db) }
    }

    /// Queues a message in the caller's transaction.
    func enqueue(_ message: MailMessage, now: Date, in db: Database) throws {
        let json = String(decoding: try JSONEncoder().encode(message), as: UTF8.self)
        try db.execute(sql: """
            INSERT INTO mail_outbox (recipient_key, message, created_at, next_attempt_at) VALUES (?, ?, ?, ?)
            """, arguments: [message.to.address.lowercased(), json, now.timeIntervalSince1970, now.timeIntervalSince1970])
    }

    /// Messages whose next try is due, oldest first.
    func dueMail(now: Date, limit: Int = 20) throws -> [QueuedMail] {
        try database.pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT id, message, attempts, created_at FROM mail_outbox
                WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ? ORDER BY next_attempt_at, id LIMIT ?
                """, arguments: [now.timeIntervalSince1970, limit]).compactMap { row in
                let text: String = row["message"]
                guard let message = try? JSONDecoder().decode(MailMessage.self, from: Data(text.utf8)) else { return nil }
                return QueuedMail(id: row["id"], message: message, attempts: row["attempts"],
                                  createdAt: Date(timeIntervalSince1970: row["created_at"]))
            }
        }
    }

    /// The newest message queued to `recipient` (kept a day after it left), and when.
    func latestMail(to recipient: String) throws -> (message: MailMessage, queuedAt: Date)? {
        try database.pool.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT message, created_at FROM mail_outbox WHERE recipient_key = ? ORDER BY id DESC LIMIT 1",
                                             arguments: [recipient.lowercased()]) else { return nil }
            let text: String = row["message"]
            return try (JSONDecoder().decode(MailMessage.self, from: Data(text.utf8)), Date(timeIntervalSince1970: row["created_at"]))
        }
    }

    /// When the next message waiting is due; nil when none waits.
    func nextMailDue() throws -> Date? {
        try database.pool.read { db in
            try Double.fetchOne(db, sql: "SELECT min(next_attempt_at) FROM mail_outbox WHERE sent_at IS NULL AND failed_at IS NULL")
                .map(Date.init(timeIntervalSince1970:))
        }
    }

    /// Marks a message delivered. With `forgetBody`, its text and HTML go too: the link's
    /// token then lives only as its hash here (the row stays a day, for the address's budget).
    func markMailSent(_ id: Int64, now: Date, forgetBody: Bool) throws {
        try database.pool.write { db in
            try db.execute(sql: """
                UPDATE mail_outbox SET sent_at = ?, attempts = attempts + 1,
                    message = CASE WHEN ? THEN json_set(message, '$.text', '', '$.html', '') ELSE message END
                WHERE id = ?
                """, arguments: [now.timeIntervalSince1970, forgetBody, id])
        }
    }

    func markMailRetry(_ id: Int64, error: String, at next: Date) throws {
        try database.pool.write { db in
            try db.execute(sql: "UPDATE mail_outbox SET attempts = attempts + 1, last_error = ?, next_attempt_at = ? WHERE id = ?",
                           arguments: [error, next.timeIntervalSince1970, id])
        }
    }

    /// Gives a message up; its body goes (its token is of no use to anyone now).
    func markMailFailed(_ id: Int64, error: String, now: Date) throws {
        try database.pool.write { db in
            try db.execute(sql: """
                UPDATE mail_outbox SET attempts = attempts + 1, last_error = ?, failed_at = ?,
                    message = json_set(message, '$.text', '', '$.html', '')
                WHERE id = ?
                """, arguments: [error, now.timeIntervalSince1970, id])
        }
    }

    /// The outbox as `health` reports it.
    func mailQueueStatus(now: Date, transport: String) throws -> MailQueueStatus {
        try database.pool.read { db in
            let day = now.addingTimeInterval(-86_400).timeIntervalSince1970
            let row = try Row.fetchOne(db, sql: """
                SELECT
                    (SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL AND failed_at IS NULL),
                    (SELECT min(created_at) FROM mail_outbox WHERE sent_at IS NULL AND failed_at IS NULL),
                    (SELECT count(*) FROM mail_outbox WHERE failed_at >= ?),
                    (SELECT count(*) FROM mail_outbox WHERE sent_at >= ?),
                    (SELECT last_error FROM mail_outbox WHERE last_error IS NOT NULL ORDER BY id DESC LIMIT 1)
                """, arguments: [day, day])
            let oldest: Double? = row?[1]
            return MailQueueStatus(pending: row?[0] ?? 0,
                                   oldestPendingSeconds: oldest.map { max(0, (now.timeIntervalSince1970 - $0).rounded()) },
                                   failedLastDay: row?[2] ?? 0, sentLastDay: row?[3] ?? 0, lastError: row?[4],
                                   transport: transport)
        }
    }

    // MARK: Forgotten passwords

    /// One write, whoever has the address: `auth.password.forgot` takes as long either way.
    func queueResetRequest(email: String, now: Date, in db: Database) throws {
        try db.execute(sql: "INSERT INTO password_reset_request (email_key, at) VALUES (?, ?)",
                       arguments: [email.lowercased(), now.timeIntervalSince1970])
    }

    /// The oldest waiting requests.
    func resetRequests(limit: Int = 20) throws -> [(id: Int64, emailKey: String)] {
        try database.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, email_key FROM password_reset_request ORDER BY id LIMIT ?", arguments: [limit])
                .map { ($0["id"], $0["email_key"]) }
        }
    }

    /// Removes request `id` and, in the same transaction, does what `work` does with it.
    func resolveResetRequest(_ id: Int64, _ work: (Database) throws -> Void) throws {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM password_reset_request WHERE id = ?", arguments: [id])
            try work(db)
        }
    }

    // MARK: Upkeep

    /// Forgets spent and expired tokens, and outbox rows done with for a day.
    func purgeMail(now: Date) throws {
        try database.pool.write { db in
            let day = now.addingTimeInterval(-86_400).timeIntervalSince1970
            try db.execute(sql: "DELETE FROM mail_token WHERE expires_at < ? OR used_at < ?", arguments: [now.timeIntervalSince1970, day])
            try db.execute(sql: "DELETE FROM mail_outbox WHERE sent_at < ? OR failed_at < ?", arguments: [day, day])
        }
    }
}
