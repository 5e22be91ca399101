import Contracts
import Crypto
import Foundation
import GRDB
import ServiceKit
import Wire

/// The fields a new or upgraded account is given.
struct AccountFields: Sendable {
    var email: String
    var passwordHash: String
    var username: String?
    var firstName: String?
    var lastName: String?
    var displayName: String?
    var phone: String?
    var attributes: Attributes
    /// The primary language of the request's `lang` (`de`, `en`, …), for the account's mail.
    var lang: String?

    init(_ request: RegisterRequest, passwordHash: String) {
        email = request.email
        self.passwordHash = passwordHash
        username = request.username
        firstName = request.firstName
        lastName = request.lastName
        phone = request.phone
        attributes = request.attributes ?? [:]
        lang = request.lang.flatMap { LanguageTag($0)?.lookupChain.last }
        // A name others can see even when only first and last names were given.
        let fullName = [request.firstName, request.lastName].compactMap { $0 }.joined(separator: " ")
        displayName = request.displayName ?? (fullName.isEmpty ? request.username : fullName)
    }
}

/// What an avatar update does.
enum AvatarChange: Sendable {
    case keep
    case remove
    case replace(contentType: String, width: Int, height: Int, bytes: Data)
}

/// A refresh token that was presented twice: its whole session is revoked.
struct RefreshTokenReused: Error {
    let sessionID: String
}

/// All of auth's SQL: users, avatars, sessions and their refresh tokens, failed
/// logins, the signing key, and the change outbox entries of users.
final class AuthStore: Sendable {
    let database: ServiceDatabase
    let outbox = ChangeOutbox(service: AuthAPI.service)

    /// How long a refresh token may be used after it was issued.
    static let refreshTokenLifetime: TimeInterval = 30 * 24 * 3600

    init(database: ServiceDatabase) {
        self.database = database
    }

    // MARK: Reading users

    func user(id: String) throws -> User? {
        try database.pool.read { db in try user(id: id, in: db) }
    }

    func user(id: String, in db: Database) throws -> User? {
        try Self.record(where: "id = ?", [id], in: db).map(Self.user)
    }

    /// The users with these ids, in the order asked; unknown ids are left out.
    func users(ids: [String]) throws -> [User] {
        guard !ids.isEmpty else { return [] }
        let placeholders = Array(repeating: "?", count: ids.count).joined(separator: ",")
        let records = try database.pool.read { db in
            try UserRecord.fetchAll(db.cachedStatement(sql: "SELECT \(UserRecord.selection) FROM user WHERE id IN (\(placeholders))"),
                                    arguments: StatementArguments(ids))
        }
        let byID = Dictionary(records.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var seen = Set<String>()
        return ids.compactMap { id in
            guard seen.insert(id).inserted, let record = byID[id] else { return nil }
            return Self.user(record)
        }
    }

    func user(email: String) throws -> User? {
        try database.pool.read { db in
            try Self.record(where: "email_key = ?", [email.lowercased()], in: db).map(Self.user)
        }
    }

    /// The account a login string names (an email address or a username) and its
    /// password hash; nil when there is none with a password.
    func account(login: String) throws -> (user: User, passwordHash: String)? {
        let key = login.lowercased()
        return try database.pool.read { db in
            let condition = key.contains("@") ? "email_key = ?" : "username = ?"
            guard let record = try Self.record(where: condition, [key], in: db),
                  let hash = record.passwordHash else { return nil }
            return (Self.user(record), hash)
        }
    }

    func passwordHash(userID: String) throws -> String? {
        try database.pool.read { db in
            try String.fetchOne(db, sql: "SELECT password_hash FROM user WHERE id = ?", arguments: [userID])
        }
    }

    func isTaken(email: String?, username: String?, except userID: String? = nil) throws -> (email: Bool, username: Bool) {
        try database.pool.read { db in
            let emailTaken = try email.map {
                try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM user WHERE email_key = ? AND id IS NOT ?)",
                                  arguments: [$0.lowercased(), userID]) ?? false
            } ?? false
            let usernameTaken = try username.map {
                try Bool.fetchOne(db, sql: "SELECT EXISTS(SELECT 1 FROM user WHERE username = ? AND id IS NOT ?)",
                                  arguments: [$0, userID]) ?? false
            } ?? false
            return (emailTaken, usernameTaken)
        }
    }

    func avatar(userID: String) throws -> (contentType: String, bytes: Data)? {
        try database.pool.read { db in
            try Row.fetchOne(db, sql: "SELECT content_type, bytes FROM avatar WHERE user_id = ?", arguments: [userID])
                .map { ($0["content_type"], $0["bytes"]) }
        }
    }

    // MARK: Writing users

    func insertUser(anonymous: Bool, fields: AccountFields?, now: Date, in db: Database) throws -> User {
        let record = UserRecord(
            id: Identifier.sortable(), email: fields?.email, emailKey: fields?.email.lowercased(),
            username: fields?.username, passwordHash: fields?.passwordHash, firstName: fields?.firstName,
            lastName: fields?.lastName, displayName: fields?.displayName, phone: fields?.phone,
            attributes: Self.json(fields?.attributes ?? [:]), anonymous: anonymous, lat: nil, lon: nil,
            discoverable: false, showEmail: false, showPhone: false, hasAvatar: false,
            createdAt: now.timeIntervalSince1970, updatedAt: now.timeIntervalSince1970, lang: fields?.lang)
        try Self.mapUniqueness { try record.insert(db) }
        let user = Self.user(record)
        try recordUpdated(user, in: db)
        return user
    }

    /// Gives an anonymous user an account, keeping their id. The row decides, not the
    /// caller's token: a token from before an upgrade still says anonymous for up to
    /// 15 minutes, and must not overwrite the account's email and password.
    func upgrade(userID: String, fields: AccountFields, now: Date, in db: Database) throws -> User {
        guard var record = try Self.record(where: "id = ?", [userID], in: db) else {
            throw ServiceError.unauthenticated("the user no longer exists")
        }
        guard record.anonymous else { throw AuthHandlers.alreadyRegistered }
        record.email = fields.email
        record.emailKey = fields.email.lowercased()
        record.username = fields.username
        record.passwordHash = fields.passwordHash
        record.firstName = fields.firstName
        record.lastName = fields.lastName
        record.displayName = fields.displayName
        record.phone = fields.phone
        record.attributes = Self.json(fields.attributes)
        record.anonymous = false
        record.emailVerified = false
        record.lang = fields.lang ?? record.lang
        record.updatedAt = now.timeIntervalSince1970
        try Self.mapUniqueness { try record.update(db) }
        let user = Self.user(record)
        try recordUpdated(user, in: db)
        return user
    }

    func updateProfile(userID: String, _ request: ProfileUpdateRequest, avatar: AvatarChange, now: Date,
                       in db: Database) throws -> User {
        try modifyUser(userID, now: now, in: db) { record in
            record.displayName = request.displayName.applied(to: record.displayName)
            record.firstName = request.firstName.applied(to: record.firstName)
            record.lastName = request.lastName.applied(to: record.lastName)
            record.phone = request.phone.applied(to: record.phone)
            switch request.attributes {
            case .unchanged: break
            case .cleared: record.attributes = Self.json([:])
            case .set(let attributes): record.attributes = Self.json(attributes)
            }
            if let showEmail = request.contact?.showEmail { record.showEmail = showEmail }
            if let showPhone = request.contact?.showPhone { record.showPhone = showPhone }
            switch avatar {
            case .keep:
                break
            case .remove:
                try db.execute(sql: "DELETE FROM avatar WHERE user_id = ?", arguments: [userID])
                record.hasAvatar = false
            case .replace(let contentType, let width, let height, let bytes):
                try db.execute(sql: """
                    INSERT OR REPLACE INTO avatar (user_id, content_type, width, height, bytes) VALUES (?, ?, ?, ?, ?)
                    """, arguments: [userID, contentType, width, height, bytes])
                record.hasAvatar = true
            }
        }
    }

    func setLocation(userID: String, _ location: UserLocation, now: Date, in db: Database) throws -> User {
        try modifyUser(userID, now: now, in: db) { record in
            record.lat = location.lat
            record.lon = location.lon
            record.discoverable = location.discoverable
        }
    }

    func setPasswordHash(userID: String, _ hash: String, in db: Database) throws {
        try db.execute(sql: "UPDATE user SET password_hash = ? WHERE id = ?", arguments: [hash, userID])
    }

    /// Replaces a user's password hash with `new` only while it is still `old`, so a hash
    /// renewed at a login cannot undo a password change committed meanwhile. Whether it did.
    @discardableResult
    func renewPasswordHash(userID: String, from old: String, to new: String, in db: Database) throws -> Bool {
        try db.execute(sql: "UPDATE user SET password_hash = ? WHERE id = ? AND password_hash = ?",
                       arguments: [new, userID, old])
        return db.changesCount > 0
    }

    /// Deletes the user with their avatar and sessions, and tells followers.
    func deleteUser(userID: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM user WHERE id = ?", arguments: [userID])
        try db.execute(sql: "DELETE FROM known_origin WHERE user_id = ?", arguments: [userID])
        try outbox.record(UserChange(seq: 0, type: .deleted, userId: userID, user: nil), entity: userID, in: db)
    }

    /// Applies `change` to a user's row; tells followers when what they see changed.
    func modifyUser(_ userID: String, now: Date, in db: Database,
                            _ change: (inout UserRecord) throws -> Void) throws -> User {
        guard var record = try Self.record(where: "id = ?", [userID], in: db) else {
            throw ServiceError.unauthenticated("the user no longer exists")
        }
        let before = Self.user(record)
        try change(&record)
        record.updatedAt = now.timeIntervalSince1970
        try record.update(db)
        let after = Self.user(record)
        if FeedUser(after) != FeedUser(before) {
            try recordUpdated(after, in: db)
        }
        return after
    }

    private func recordUpdated(_ user: User, in db: Database) throws {
        try outbox.record(UserChange(seq: 0, type: .updated, userId: user.id, user: FeedUser(user)), entity: user.id, in: db)
    }

    // MARK: Sessions and refresh tokens

    func createSession(userID: String, now: Date, in db: Database) throws -> String {
        let id = Identifier.sortable()
        try db.execute(sql: "INSERT INTO session (id, user_id, created_at) VALUES (?, ?, ?)",
                       arguments: [id, userID, now.timeIntervalSince1970])
        return id
    }

    /// Whether a session is still open for its user (not logged out, revoked, or
    /// gone with a deleted user).
    /// Those of `sessionIDs` that are revoked or no longer kept.
    func endedSessions(_ sessionIDs: [String]) throws -> [String] {
        let active = try database.pool.read { db in
            try Set(String.fetchAll(db, sql: """
                SELECT id FROM session WHERE revoked_at IS NULL AND id IN (SELECT value FROM json_each(?))
                """, arguments: [JSONList.argument(sessionIDs)]))
        }
        return sessionIDs.filter { !active.contains($0) }
    }

    func isSessionActive(_ sessionID: String, userID: String) throws -> Bool {
        try database.pool.read { db in
            try Bool.fetchOne(db, sql: """
                SELECT EXISTS(SELECT 1 FROM session WHERE id = ? AND user_id = ? AND revoked_at IS NULL)
                """, arguments: [sessionID, userID]) ?? false
        }
    }

    /// Issues the session's next refresh token; any earlier unspent one is spent,
    /// so presenting it again counts as reuse.
    func issueRefreshToken(sessionID: String, now: Date, in db: Database) throws -> String {
        guard try Bool.fetchOne(db, sql: "SELECT revoked_at IS NULL FROM session WHERE id = ?", arguments: [sessionID]) == true else {
            throw ServiceError.unauthenticated("the session has ended; log in again")
        }
        try db.execute(sql: "UPDATE refresh_token SET spent_at = ? WHERE session_id = ? AND spent_at IS NULL",
                       arguments: [now.timeIntervalSince1970, sessionID])
        let token = Identifier.random(count: 43)
        try db.execute(sql: """
            INSERT INTO refresh_token (token_hash, session_id, issued_at, expires_at) VALUES (?, ?, ?, ?)
            """, arguments: [Self.hash(token), sessionID, now.timeIntervalSince1970,
                             now.addingTimeInterval(Self.refreshTokenLifetime).timeIntervalSince1970])
        return token
    }

    /// Spends a refresh token and issues the session's next one.
    ///
    /// - Throws: `RefreshTokenReused` when the token was spent before (the caller
    ///   revokes the session); `unauthenticated` when it is unknown, expired, or its
    ///   session has ended.
    func rotate(refreshToken: String, now: Date, in db: Database) throws -> (userID: String, sessionID: String, token: String) {
        let row = try Row.fetchOne(db, sql: """
            SELECT t.session_id, t.expires_at, t.spent_at, s.user_id, s.revoked_at
            FROM refresh_token t JOIN session s ON s.id = t.session_id
            WHERE t.token_hash = ?
            """, arguments: [Self.hash(refreshToken)])
        guard let row else { throw ServiceError.unauthenticated("the refresh token is not valid") }
        let sessionID: String = row["session_id"]
        guard row["revoked_at"] as Double? == nil else {
            throw ServiceError.unauthenticated("the session has ended; log in again")
        }
        guard row["spent_at"] as Double? == nil else { throw RefreshTokenReused(sessionID: sessionID) }
        guard (row["expires_at"] as Double) > now.timeIntervalSince1970 else {
            throw ServiceError.unauthenticated("the refresh token has expired; log in again")
        }
        let token = try issueRefreshToken(sessionID: sessionID, now: now, in: db)
        return (row["user_id"], sessionID, token)
    }

    /// The session a refresh token belongs to, spent or not.
    func session(refreshToken: String) throws -> String? {
        try database.pool.read { db in
            try String.fetchOne(db, sql: "SELECT session_id FROM refresh_token WHERE token_hash = ?",
                                arguments: [Self.hash(refreshToken)])
        }
    }

    func revokeSession(_ sessionID: String, reason: String, now: Date, in db: Database) throws {
        try db.execute(sql: "UPDATE session SET revoked_at = ?, revoked_reason = ? WHERE id = ? AND revoked_at IS NULL",
                       arguments: [now.timeIntervalSince1970, reason, sessionID])
    }

    /// Revokes a session in a transaction of its own (reuse detection must stick
    /// even though the request fails).
    func revokeSession(_ sessionID: String, reason: String, now: Date) throws {
        try database.pool.write { db in try revokeSession(sessionID, reason: reason, now: now, in: db) }
    }

    func revokeSessions(userID: String, except keptSessionID: String, reason: String, now: Date, in db: Database) throws {
        try db.execute(sql: """
            UPDATE session SET revoked_at = ?, revoked_reason = ? WHERE user_id = ? AND id != ? AND revoked_at IS NULL
            """, arguments: [now.timeIntervalSince1970, reason, userID, keptSessionID])
    }

    // MARK: Password failures

    /// Charges a password check to its budgets as a failure before it runs, in one
    /// transaction with the check that each has room: concurrent guesses cannot all
    /// pass the check before any is counted. Throws `BudgetSpent` (nothing charged)
    /// when one is spent.
    func charge(_ budgets: [FailureBudget], cleared: [String], window: TimeInterval, now: Date) throws -> ChargedAttempt {
        try database.pool.write { db in
            let since = now.addingTimeInterval(-window).timeIntervalSince1970
            for budget in budgets {
                let row = try Row.fetchOne(db.cachedStatement(sql: """
                    SELECT count(*), max(at) FROM password_failure WHERE budget = ? AND at >= ?
                    """), arguments: [budget.key, since])
                let count: Int = row?[0] ?? 0
                guard count >= budget.limit else { continue }
                // A refusing budget admits another try once enough of its failures have aged out.
                let oldestOver = try Double.fetchOne(db.cachedStatement(sql: """
                    SELECT at FROM password_failure WHERE budget = ? AND at >= ? ORDER BY at LIMIT 1 OFFSET ?
                    """), arguments: [budget.key, since, count - budget.limit]) ?? now.timeIntervalSince1970
                let latest: Double = row?[1] ?? now.timeIntervalSince1970
                if let reopens = budget.reopens(count: count, oldestOver: oldestOver, latest: latest, window: window,
                                                now: now.timeIntervalSince1970) {
                    throw BudgetSpent(budget: budget, reopensAt: Date(timeIntervalSince1970: reopens))
                }
            }
            let insert = try db.cachedStatement(sql: "INSERT INTO password_failure (budget, at) VALUES (?, ?)")
            var rows: [Int64] = []
            for budget in budgets {
                try insert.execute(arguments: [budget.key, now.timeIntervalSince1970])
                rows.append(db.lastInsertedRowID)
            }
            return ChargedAttempt(failureRows: rows, clearedOnSuccess: cleared)
        }
    }

    // MARK: Known origins

    /// Whether `userID` signed in from `origin` since `since` (LoginPolicy).
    func isKnown(origin: String, userID: String, since: Date) throws -> Bool {
        try database.pool.read { db in
            try Bool.fetchOne(db.cachedStatement(sql: """
                SELECT EXISTS(SELECT 1 FROM known_origin WHERE user_id = ? AND origin = ? AND last_at >= ?)
                """), arguments: [userID, origin, since.timeIntervalSince1970]) ?? false
        }
    }

    /// Notes that `userID` signed in (or proved its password) from `origin`.
    func noteSignIn(userID: String, origin: String, now: Date, in db: Database) throws {
        try db.execute(sql: """
            INSERT INTO known_origin (user_id, origin, last_at) VALUES (?, ?, ?)
            ON CONFLICT (user_id, origin) DO UPDATE SET last_at = excluded.last_at
            """, arguments: [userID, origin, now.timeIntervalSince1970])
    }

    /// Takes back a charged check whose password was right, and empties the budgets
    /// a right password clears; in the transaction that acts on it.
    func forgive(_ attempt: ChargedAttempt, in db: Database) throws {
        let deleteRow = try db.cachedStatement(sql: "DELETE FROM password_failure WHERE rowid = ?")
        for row in attempt.failureRows { try deleteRow.execute(arguments: [row]) }
        let clear = try db.cachedStatement(sql: "DELETE FROM password_failure WHERE budget = ?")
        for budget in attempt.clearedOnSuccess { try clear.execute(arguments: [budget]) }
    }

    // MARK: Signing key

    /// The key that signs access tokens, made and kept on first use.
    func signingKey(now: Date = Date()) throws -> (kid: String, privateKey: Data) {
        try database.pool.write { db in
            if let row = try Row.fetchOne(db, sql: "SELECT kid, private_key FROM signing_key ORDER BY created_at DESC LIMIT 1") {
                return (row["kid"], row["private_key"])
            }
            let key = Curve25519.Signing.PrivateKey()
            let kid = Identifier.random(count: 16)
            try db.execute(sql: "INSERT INTO signing_key (kid, private_key, created_at) VALUES (?, ?, ?)",
                           arguments: [kid, key.rawRepresentation, now.timeIntervalSince1970])
            return (kid, key.rawRepresentation)
        }
    }

    // MARK: Upkeep

    /// Forgets what no rule needs any more: old login failures, origins not signed
    /// in from for `knownFor`, expired refresh tokens, and sessions ended a month ago.
    func purge(now: Date, loginWindow: TimeInterval, knownFor: TimeInterval) throws {
        try database.pool.write { db in
            try db.execute(sql: "DELETE FROM password_failure WHERE at < ?",
                           arguments: [now.addingTimeInterval(-loginWindow).timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM known_origin WHERE last_at < ?",
                           arguments: [now.addingTimeInterval(-knownFor).timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM refresh_token WHERE expires_at < ?", arguments: [now.timeIntervalSince1970])
            try db.execute(sql: "DELETE FROM session WHERE revoked_at < ?",
                           arguments: [now.addingTimeInterval(-Self.refreshTokenLifetime).timeIntervalSince1970])
        }
    }

    // MARK: Mapping

    static func record(where condition: String, _ arguments: StatementArguments, in db: Database) throws -> UserRecord? {
        try UserRecord.fetchOne(db.cachedStatement(sql: "SELECT \(UserRecord.selection) FROM user WHERE \(condition)"),
                                arguments: arguments)
    }

    static func user(_ record: UserRecord) -> User {
        let attributes = (try? JSONValueDecoder().decode(Attributes.self, from: Data(record.attributes.utf8))) ?? [:]
        let location = record.lat.flatMap { lat in
            record.lon.map { UserLocation(lat: lat, lon: $0, discoverable: record.discoverable) }
        }
        return User(id: record.id, email: record.email, username: record.username, firstName: record.firstName,
                    lastName: record.lastName, displayName: record.displayName, phone: record.phone,
                    attributes: attributes, anonymous: record.anonymous, location: location,
                    contact: ContactVisibility(showEmail: record.showEmail, showPhone: record.showPhone),
                    hasAvatar: record.hasAvatar, createdAt: Date(timeIntervalSince1970: record.createdAt),
                    emailVerified: record.emailVerified, pendingEmail: record.pendingEmail, lang: record.lang)
    }

    private static func json(_ attributes: Attributes) -> String {
        String(decoding: (try? JSONValueEncoder().encodeData(attributes)) ?? Data("{}".utf8), as: UTF8.self)
    }

    static func hash(_ token: String) -> Data {
        Data(SHA256.hash(data: Data(token.utf8)))
    }

    /// Turns a unique-constraint failure into `already_exists` naming the field.
    static func mapUniqueness<Result>(_ write: () throws -> Result) throws -> Result {
        do {
            return try write()
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT {
            let message = error.message ?? ""
            if message.contains("user.email_key") {
                throw ServiceError.alreadyExists("an account with this email address exists", field: "email")
            }
            if message.contains("user.username") {
                throw ServiceError.alreadyExists("this username is taken", field: "username")
            }
            throw error
        }
    }
}
