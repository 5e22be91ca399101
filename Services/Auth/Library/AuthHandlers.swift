import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Wire

/// Which session a session-issuing request made or used: what a retry of it needs
/// to issue fresh tokens in the same session.
struct SessionState: Codable, Sendable {
    var userId: String
    var sessionId: String
}

/// The rules of login throttling.
struct LoginPolicy: Sendable {
    /// Failed logins for one login string within `window` before further tries are refused.
    var maxFailures = 5
    var window: TimeInterval = 15 * 60
}

/// Auth's handlers: each checks what the op requires and leaves all SQL to the store.
struct AuthHandlers: Sendable {
    static let hashingPool = "hashing"
    /// One message for every failed login, so it never tells whether an account exists.
    static let loginFailed = "the login or the password is wrong"

    let store: AuthStore
    let hasher: PasswordHasher
    let issuer: TokenIssuer
    let policy: LoginPolicy
    let profiles: ProfileCache
    /// Checked against when no account matches, so a login takes as long either way.
    let decoyHash: String

    func register(into router: inout Router) {
        router.sessionWrite(AuthAPI.register, lane: .pool(Self.hashingPool), state: SessionState.self,
                            handle: register, replay: { state, request, _ in try reissue(state, password: request.password) })
        router.sessionWrite(AuthAPI.login, lane: .pool(Self.hashingPool), state: SessionState.self,
                            handle: login, replay: { state, request, _ in try reissue(state, password: request.password) })
        router.sessionWrite(AuthAPI.anonymous, state: SessionState.self,
                            handle: anonymous, replay: { state, _, _ in try reissue(state, password: nil) })
        router.sessionWrite(AuthAPI.upgrade, lane: .pool(Self.hashingPool), state: SessionState.self,
                            handle: upgrade, replay: { state, request, _ in try reissue(state, password: request.password) })
        router.sessionWrite(AuthAPI.refresh, state: SessionState.self,
                            handle: refresh, replay: { state, _, _ in try reissue(state, password: nil) })
        router.sessionWrite(AuthAPI.passwordChange, lane: .pool(Self.hashingPool), state: SessionState.self,
                            handle: changePassword, replay: { state, request, _ in try reissue(state, password: request.newPassword) })
        router.write(AuthAPI.logout, logout)
        router.write(AuthAPI.profileUpdate, updateProfile)
        router.write(AuthAPI.locationSet, setLocation)
        router.write(AuthAPI.delete, lane: .pool(Self.hashingPool), delete)
        router.read(AuthAPI.me, me)
        router.readRaw(AuthAPI.usersGet, lane: .front, usersGet)
        router.read(AuthAPI.usersLookup, usersLookup)
        router.readWithAttachments(AuthAPI.avatarGet, avatarGet)
        router.read(AuthAPI.publicKey, lane: .front) { _, _ in PublicKeysReply(keys: [issuer.publicKey]) }
        router.changes(AuthAPI.changes, outbox: store.outbox, database: store.database)
    }

    // MARK: Sessions

    func register(_ request: RegisterRequest, _ context: RequestContext) throws -> Committed<SessionReply> {
        try checkAvailable(email: request.email, username: request.username, except: nil)
        let fields = AccountFields(request, passwordHash: try hasher.hash(request.password))
        let now = Date()
        return try context.commitSession { db in
            try openSession(for: try store.insertUser(anonymous: false, fields: fields, now: now, in: db), now: now, in: db)
        }
    }

    func login(_ request: LoginRequest, _ context: RequestContext) throws -> Committed<SessionReply> {
        let loginKey = request.login.lowercased()
        let now = Date()
        let failures = try store.loginFailures(loginKey, since: now.addingTimeInterval(-policy.window))
        if failures.count >= policy.maxFailures {
            // The window admits another try once enough of these failures have aged out.
            let reopens = failures[failures.count - policy.maxFailures].addingTimeInterval(policy.window)
            throw ServiceError.rateLimited("too many failed logins for \(request.login); try again later",
                                           retryAfterMs: Int(reopens.timeIntervalSince(now) * 1000))
        }
        let account = try store.account(login: request.login)
        let matches = hasher.verify(request.password, against: account?.passwordHash ?? decoyHash)
        guard matches, let account else {
            try store.recordLoginFailure(loginKey, at: now)
            throw ServiceError.unauthenticated(Self.loginFailed)
        }
        return try context.commitSession { db in
            try store.clearLoginFailures(loginKey, in: db)
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
        guard caller.anonymous else {
            throw ServiceError.permissionDenied("this account is registered already; only anonymous users upgrade")
        }
        try checkAvailable(email: request.email, username: request.username, except: caller.userID)
        let fields = AccountFields(request, passwordHash: try hasher.hash(request.password))
        let now = Date()
        return try context.commitSession { db in
            let user = try store.upgrade(userID: caller.userID, fields: fields, now: now, in: db)
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
        guard let hash = try store.passwordHash(userID: caller.userID) else {
            throw ServiceError.permissionDenied("anonymous users have no password; upgrade the account first")
        }
        guard hasher.verify(request.oldPassword, against: hash) else {
            throw ServiceError.unauthenticated("the old password is wrong")
        }
        let newHash = try hasher.hash(request.newPassword)
        let now = Date()
        return try context.commitSession { db in
            try store.setPasswordHash(userID: caller.userID, newHash, in: db)
            try store.revokeSessions(userID: caller.userID, except: caller.sessionID, reason: "password-change", now: now, in: db)
            return try session(for: try existingUser(caller.userID, in: db), sessionID: caller.sessionID, now: now, in: db)
        }
    }

    /// Answers a retried session request: the same user and session, fresh tokens.
    /// A request that carried a password must carry the right one again.
    func reissue(_ state: SessionState, password: String?) throws -> SessionReply {
        if let password {
            guard let hash = try store.passwordHash(userID: state.userId), hasher.verify(password, against: hash) else {
                throw ServiceError.unauthenticated(Self.loginFailed)
            }
        }
        let now = Date()
        return try store.database.pool.write { db in
            try session(for: try existingUser(state.userId, in: db), sessionID: state.sessionId, now: now, in: db).0
        }
    }

    /// A new session for `user` with its first token pair.
    private func openSession(for user: User, now: Date, in db: Database) throws -> (SessionReply, SessionState) {
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

    private func checkAvailable(email: String, username: String?, except userID: String?) throws {
        let taken = try store.isTaken(email: email, username: username, except: userID)
        if taken.email { throw ServiceError.alreadyExists("an account with this email address exists", field: "email") }
        if taken.username { throw ServiceError.alreadyExists("this username is taken", field: "username") }
    }

    private func existingUser(_ userID: String, in db: Database) throws -> User {
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
            let info = try ImageRules.check(image, field: "avatar")
            avatar = .replace(contentType: info.contentType, width: info.width, height: info.height, bytes: image)
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
        if let hash = try store.passwordHash(userID: caller.userID) {
            guard let password = request.password else {
                throw ServiceError.invalidArgument(field: "password", "password is required")
            }
            guard hasher.verify(password, against: hash) else {
                throw ServiceError.unauthenticated("the password is wrong")
            }
        }
        return try context.commit { db in
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
