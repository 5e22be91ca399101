import Contracts
import Foundation
import GRDB
import Imaging
import Logging
import ServiceKit
import Wire

/// Which session a session-issuing request made or used: what a retry of it needs
/// to issue fresh tokens in the same session.
struct SessionState: Codable, Sendable {
    var userId: String
    var sessionId: String
}

/// Auth's handlers: each checks what the op requires and leaves all SQL to the store.
struct AuthHandlers: Sendable {
    static let hashingPool = "hashing"
    /// One message for every failed login, so it never tells whether an account exists.
    static let loginFailed = "the login or the password is wrong"
    static let alreadyRegistered = ServiceError.permissionDenied("this account is registered already; only anonymous users upgrade")

    let store: AuthStore
    let hasher: PasswordHasher
    let issuer: TokenIssuer
    let policy: LoginPolicy
    let profiles: ProfileCache
    /// Checked against when no account matches, so a login takes as long either way.
    let decoyHash: String
    /// New accounts one client address may make (registrations and upgrades, and
    /// anonymous accounts apart); nil for no limit.
    let accountsPerAddress: RateLimiter.Policy?
    /// Where account mail comes from and where its links point.
    let mail: AccountMailSettings

    func register(into router: inout Router) {
        router.sessionWrite(AuthAPI.register, lane: .pool(Self.hashingPool), state: SessionState.self,
                            handle: register, replay: { state, request, context in try reissue(state, password: request.password, context) })
        router.sessionWrite(AuthAPI.login, lane: .pool(Self.hashingPool), state: SessionState.self,
                            handle: login, replay: { state, request, context in try reissue(state, password: request.password, context) })
        router.freshWrite(AuthAPI.anonymous, anonymous)
        router.sessionWrite(AuthAPI.upgrade, lane: .pool(Self.hashingPool), state: SessionState.self,
                            handle: upgrade, replay: { state, request, context in try reissue(state, password: request.password, context) })
        router.freshWrite(AuthAPI.refresh, refresh)
        router.sessionWrite(AuthAPI.passwordChange, lane: .pool(Self.hashingPool), state: SessionState.self,
                            handle: changePassword,
                            replay: { state, request, context in try reissue(state, password: request.newPassword, context) })
        router.write(AuthAPI.logout, logout)
        router.write(AuthAPI.profileUpdate, updateProfile)
        router.write(AuthAPI.locationSet, setLocation)
        router.write(AuthAPI.delete, lane: .pool(Self.hashingPool), delete)
        router.read(AuthAPI.me, me)
        router.readRaw(AuthAPI.usersGet, lane: .front, usersGet)
        // An email address in, a profile out: ten a minute per caller keeps that from
        // turning a list of addresses into a list of users.
        router.read(AuthAPI.usersLookup, limit: Self.lookups, usersLookup)
        // A fresh account, anonymous or not, would sidestep that: the client's address counts too.
        router.limitByAddress(AuthAPI.usersLookup, AddressLimit(RateLimiter(policy: Self.lookups),
                                                                refusal: "too many lookups from this address; slow down"))
        router.readWithAttachments(AuthAPI.avatarGet, avatarGet)
        router.read(AuthAPI.publicKey, lane: .front) { _, _ in PublicKeysReply(keys: [issuer.publicKey]) }
        router.changes(AuthAPI.changes, outbox: store.outbox, database: store.database)
        router.read(AuthAPI.sessionsEnded) { request, _ in SessionsEndedReply(ended: try store.endedSessions(request.sessionIds)) }
        registerAccountMail(into: &router)
        // Each account costs a row, and a registration or upgrade a password hash on the
        // hashing threads: refused by address, before any of that is spent.
        if let accountsPerAddress {
            let accounts = AddressLimit(RateLimiter(policy: accountsPerAddress),
                                        refusal: "too many new accounts from this address; try again later")
            router.limitByAddress(AuthAPI.register, accounts)
            router.limitByAddress(AuthAPI.upgrade, accounts)
            router.limitByAddress(AuthAPI.anonymous, AddressLimit(RateLimiter(policy: accountsPerAddress),
                                                                  refusal: "too many anonymous accounts from this address; try again later"))
        }
    }

    /// Lookups by email, per caller and per address: ten a minute.
    static let lookups = RateLimiter.Policy(perSecond: 1.0 / 6, burst: 10)

    // MARK: Sessions

    func register(_ request: RegisterRequest, _ context: RequestContext) throws -> Committed<SessionReply> {
        try checkAvailable(email: request.email, username: request.username, except: nil)
        let fields = AccountFields(request, passwordHash: try hasher.hash(request.password))
        let now = Date()
        return try context.commitSession { db in
            let user = try store.insertUser(anonymous: false, fields: fields, now: now, in: db)
            try store.noteSignIn(userID: user.id, origin: context.origin, now: now, in: db)
            try mailConfirmation(to: user, now: now, in: db)
            return try openSession(for: user, now: now, in: db)
        }
    }

    func login(_ request: LoginRequest, _ context: RequestContext) throws -> Committed<SessionReply> {
        let account = try store.account(login: request.login)
        // An unknown login is throttled like a known one, by its own text.
        let accountKey = account.map { "user:\($0.user.id)" } ?? "login:\(request.login.lowercased())"
        let now = Date()
        let attempt = try charge(account: accountKey, userID: account?.user.id, context, now: now)
        let matches = hasher.verify(request.password, against: account?.passwordHash ?? decoyHash)
        guard matches, let account else { throw ServiceError.unauthenticated(Self.loginFailed) }
        // A hash made at another cost than auth's now is made again while the password
        // is at hand (once: the new one has the current cost). Should scrypt fail for
        // want of memory, the login still succeeds on the old hash and the next tries again.
        let renewedHash = hasher.needsRehash(account.passwordHash) ? try? hasher.hash(request.password) : nil
        return try context.commitSession { db in
            try store.forgive(attempt, in: db)
            if let renewedHash {
                try store.renewPasswordHash(userID: account.user.id, from: account.passwordHash, to: renewedHash, in: db)
            }
            try store.noteSignIn(userID: account.user.id, origin: context.origin, now: now, in: db)
            return try openSession(for: account.user, now: now, in: db)
        }
    }

    func anonymous(_ request: Empty, _ context: RequestContext) throws -> Committed<SessionReply> {
        let now = Date()
        return try context.commitSession { db in
            try openSession(for: try store.insertUser(anonymous: true, fields: nil, now: now, in: db), now: now, in: db)
        }
    }

    /// Gives an anonymous user an account; the id, and so everything they saved, stays.
    func upgrade(_ request: RegisterRequest, _ context: RequestContext) throws -> Committed<SessionReply> {
        let caller = try context.requireCaller()
        guard caller.anonymous else { throw Self.alreadyRegistered }
        try checkAvailable(email: request.email, username: request.username, except: caller.userID)
        let fields = AccountFields(request, passwordHash: try hasher.hash(request.password))
        let now = Date()
        return try context.commitSession { db in
            let user = try store.upgrade(userID: caller.userID, fields: fields, now: now, in: db)
            try store.noteSignIn(userID: user.id, origin: context.origin, now: now, in: db)
            try mailConfirmation(to: user, now: now, in: db)
            return try session(for: user, sessionID: caller.sessionID, now: now, in: db)
        }
    }

    func refresh(_ request: RefreshRequest, _ context: RequestContext) throws -> Committed<SessionReply> {
        let now = Date()
        do {
            return try context.commitSession { db in
                let rotated = try store.rotate(refreshToken: request.refreshToken, now: now, in: db)
                let user = try existingUser(rotated.userID, in: db)
                let accessToken = try issuer.accessToken(userID: user.id, sessionID: rotated.sessionID,
                                                         anonymous: user.anonymous, now: now)
                return (SessionReply(user: user, accessToken: accessToken, refreshToken: rotated.token,
                                     expiresIn: Int(TokenIssuer.lifetime)),
                        SessionState(userId: user.id, sessionId: rotated.sessionID))
            }
        } catch let reuse as RefreshTokenReused {
            // A spent token came back: whoever holds the family's tokens, one of them
            // is not the user. End the session for both.
            try store.revokeSession(reuse.sessionID, reason: "reuse", now: now)
            context.logger.notice("refresh token reused; session revoked", metadata: ["session": "\(reuse.sessionID)"])
            throw ServiceError.unauthenticated("this refresh token was used before, so its session has been ended; log in again")
        }
    }

    func logout(_ request: RefreshRequest, _ context: RequestContext) throws -> Committed<Empty> {
        guard let sessionID = try store.session(refreshToken: request.refreshToken) else {
            throw ServiceError.unauthenticated("the refresh token is not valid")
        }
        let now = Date()
        return try context.commit { db in
            try store.revokeSession(sessionID, reason: "logout", now: now, in: db)
            return Empty()
        }
    }

    func changePassword(_ request: PasswordChangeRequest, _ context: RequestContext) throws -> Committed<SessionReply> {
        let caller = try context.requireCaller()
        let now = Date()
        let attempt = try checkPassword(request.oldPassword, of: caller.userID, context, now: now,
                                        wrong: "the old password is wrong", none: "anonymous users have no password; upgrade the account first")
        let newHash = try hasher.hash(request.newPassword)
        return try context.commitSession { db in
            try store.forgive(attempt, in: db)
            try store.noteSignIn(userID: caller.userID, origin: context.origin, now: now, in: db)
            try store.setPasswordHash(userID: caller.userID, newHash, in: db)
            try store.revokeSessions(userID: caller.userID, except: caller.sessionID, reason: "password-change", now: now, in: db)
            return try session(for: try existingUser(caller.userID, in: db), sessionID: caller.sessionID, now: now, in: db)
        }
    }

    /// Answers a retried session request: the same user and session, fresh tokens.
    /// It must carry the right password again, checked within the same budgets as a
    /// login, so a known request id is no way around them.
    func reissue(_ state: SessionState, password: String, _ context: RequestContext) throws -> SessionReply {
        let now = Date()
        let attempt = try charge(account: "user:\(state.userId)", userID: state.userId, context, now: now)
        guard let hash = try store.passwordHash(userID: state.userId), hasher.verify(password, against: hash) else {
            throw ServiceError.unauthenticated(Self.loginFailed)
        }
        return try store.database.pool.write { db in
            try store.forgive(attempt, in: db)
            try store.noteSignIn(userID: state.userId, origin: context.origin, now: now, in: db)
            return try session(for: try existingUser(state.userId, in: db), sessionID: state.sessionId, now: now, in: db).0
        }
    }

    /// Checks the caller's own password (to change it, the address, or to delete the
    /// account), charged to the account's budgets like a login; the charge is to be
    /// forgiven in the transaction that acts on it.
    func checkPassword(_ password: String, of userID: String, _ context: RequestContext, now: Date, wrong: String,
                       none: String) throws -> ChargedAttempt {
        guard let hash = try store.passwordHash(userID: userID) else { throw ServiceError.permissionDenied(none) }
        let attempt = try charge(account: "user:\(userID)", userID: userID, context, now: now)
        guard hasher.verify(password, against: hash) else { throw ServiceError.unauthenticated(wrong) }
        return attempt
    }

    /// Counts a password check against its budgets before it runs (see `LoginPolicy`):
    /// the strangers' budget too unless `userID` signed in from this origin before;
    /// `rate_limited`, checking nothing, while one has no room.
    func charge(account: String, userID: String?, _ context: RequestContext, now: Date) throws -> ChargedAttempt {
        let known = try userID.map { try store.isKnown(origin: context.origin, userID: $0, since: now.addingTimeInterval(-policy.knownFor)) } ?? false
        do {
            return try store.charge(policy.budgets(account: account, origin: context.origin, known: known),
                                    cleared: policy.clearedOnSuccess(account: account, origin: context.origin),
                                    window: policy.window, now: now)
        } catch let spent as BudgetSpent {
            throw ServiceError.rateLimited(spent.budget.refusal,
                                           retryAfterMs: Int((spent.reopensAt.timeIntervalSince(now) * 1000).rounded(.up)))
        }
    }

    /// A new session for `user` with its first token pair.
    func openSession(for user: User, now: Date, in db: Database) throws -> (SessionReply, SessionState) {
        let sessionID = try store.createSession(userID: user.id, now: now, in: db)
        return try session(for: user, sessionID: sessionID, now: now, in: db)
    }

    /// A new token pair in `sessionID`, and the state a retry needs.
    private func session(for user: User, sessionID: String, now: Date, in db: Database) throws -> (SessionReply, SessionState) {
        let refreshToken = try store.issueRefreshToken(sessionID: sessionID, now: now, in: db)
        let accessToken = try issuer.accessToken(userID: user.id, sessionID: sessionID, anonymous: user.anonymous, now: now)
        return (SessionReply(user: user, accessToken: accessToken, refreshToken: refreshToken,
                             expiresIn: Int(TokenIssuer.lifetime)),
                SessionState(userId: user.id, sessionId: sessionID))
    }

    func checkAvailable(email: String, username: String?, except userID: String?) throws {
        let taken = try store.isTaken(email: email, username: username, except: userID)
        if taken.email { throw ServiceError.alreadyExists("an account with this email address exists", field: "email") }
        if taken.username { throw ServiceError.alreadyExists("this username is taken", field: "username") }
    }

    func existingUser(_ userID: String, in db: Database) throws -> User {
        guard let user = try store.user(id: userID, in: db) else {
            throw ServiceError.unauthenticated("the user no longer exists")
        }
        return user
    }

    // MARK: Profile

    func me(_ request: Empty, _ context: RequestContext) throws -> UserReply {
        guard let user = try store.user(id: try context.requireCaller().userID) else {
            throw ServiceError.unauthenticated("the user no longer exists")
        }
        return UserReply(user: user)
    }

    func updateProfile(_ request: ProfileUpdateRequest, _ context: RequestContext) throws -> Committed<UserReply> {
        let caller = try context.requireCaller()
        var avatar = AvatarChange.keep
        if let image = context.attachments.first {
            guard !request.removeAvatar else {
                throw ServiceError.invalidArgument(field: "removeAvatar", "send either a new avatar or removeAvatar, not both")
            }
            let (info, kept) = try ImageRules.accept(image, field: "avatar")
            avatar = .replace(contentType: info.contentType, width: info.width, height: info.height, bytes: kept)
        } else if request.removeAvatar {
            avatar = .remove
        }
        let now = Date()
        return try context.commit { db in
            UserReply(user: try store.updateProfile(userID: caller.userID, request, avatar: avatar, now: now, in: db))
        }
    }

    func setLocation(_ request: LocationSetRequest, _ context: RequestContext) throws -> Committed<UserReply> {
        let caller = try context.requireCaller()
        let location = UserLocation(lat: request.lat, lon: request.lon, discoverable: request.discoverable)
        let now = Date()
        return try context.commit { db in
            UserReply(user: try store.setLocation(userID: caller.userID, location, now: now, in: db))
        }
    }

    func delete(_ request: DeleteRequest, _ context: RequestContext) throws -> Committed<Empty> {
        let caller = try context.requireCaller()
        var attempt: ChargedAttempt?
        if let hash = try store.passwordHash(userID: caller.userID) {
            guard let password = request.password else {
                throw ServiceError.invalidArgument(field: "password", "password is required")
            }
            attempt = try charge(account: "user:\(caller.userID)", userID: caller.userID, context, now: Date())
            guard hasher.verify(password, against: hash) else {
                throw ServiceError.unauthenticated("the password is wrong")
            }
        }
        return try context.commit { db in
            if let attempt { try store.forgive(attempt, in: db) }
            try store.deleteUser(userID: caller.userID, in: db)
            return Empty()
        }
    }

    // MARK: Public profiles

    /// Answered from the profile cache, written as JSON straight into the reply.
    func usersGet(_ request: UsersGetRequest, _ context: RequestContext) throws -> RawJSON {
        var (profiles, generation) = profiles.lookup(request.ids)
        let missing = request.ids.filter { profiles[$0] == nil }
        if !missing.isEmpty {
            // The front thread answers from memory only.
            guard context.mayWait else { throw RequestContext.Deferred() }
            let encoder = JSONValueEncoder()
            var read: [String: [UInt8]] = [:]
            for user in try store.users(ids: missing) {
                read[user.id] = [UInt8](try encoder.encodeData(user.publicProfile))
            }
            self.profiles.insert(read, generation: generation)
            profiles.merge(read) { $1 }
        }
        var seen = Set<String>()
        let found = request.ids.compactMap { id in seen.insert(id).inserted ? profiles[id] : nil }
        var writer = JSONWriter(capacity: 16 + found.reduce(0) { $0 + $1.count + 1 })
        writer.appendASCII("{\"users\":")
        writer.writeRawArray(found)
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }

    func usersLookup(_ request: UsersLookupRequest, _ context: RequestContext) throws -> PublicUserReply {
        guard let user = try store.user(email: request.email) else {
            throw ServiceError.notFound("no user has this email address")
        }
        return PublicUserReply(user: user.publicProfile)
    }

    func avatarGet(_ request: AvatarGetRequest, _ context: RequestContext) throws -> Reply<AvatarReply> {
        guard let avatar = try store.avatar(userID: request.userId) else {
            throw ServiceError.notFound("this user has no avatar")
        }
        return Reply(AvatarReply(contentType: avatar.contentType), attachments: [avatar.bytes])
    }
}
