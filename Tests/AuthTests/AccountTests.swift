@testable import Auth
import Contracts
import Foundation
import JWTKit
import TestThreads
import Testing
import Wire

@Suite("Registering and logging in", .ownThread)
struct AccountTests {
    @Test("register returns the user, a 15-minute access token and a refresh token")
    func register() throws {
        let auth = try AuthFixture()
        let session = try auth.client.call(AuthAPI.register, RegisterRequest(
            email: "Ada@Example.org", password: "correct horse", username: "ada_l", firstName: "Ada", lastName: "Lovelace",
            phone: "+44 20 7946 0000", attributes: ["certification": .string("PADI"), "dives": .number(120), "nitrox": .bool(true)]))
        #expect(session.expiresIn == 900)
        #expect(!session.accessToken.isEmpty && !session.refreshToken.isEmpty)
        let user = session.user
        #expect(user.email == "Ada@Example.org")
        #expect(user.username == "ada_l")
        #expect(user.displayName == "Ada Lovelace")
        #expect(user.anonymous == false)
        #expect(user.attributes["dives"] == .number(120))
        #expect(user.contact == ContactVisibility(showEmail: false, showPhone: false))
        #expect(user.location == nil)

        let me = try auth.client.call(AuthAPI.me, Empty(), token: session.accessToken)
        #expect(me.user == user)
    }

    @Test("access tokens are standard JWTs that jwt-kit verifies with auth.publicKey's key")
    func tokensVerifyWithJWTKit() async throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let jwk = try #require(try auth.client.call(AuthAPI.publicKey, Empty()).keys.first)
        #expect(jwk.alg == "EdDSA")
        #expect(Base64URL.decode(jwk.x)?.count == 32)
        let keys = JWTKeyCollection()
        await keys.add(eddsa: try EdDSA.PublicKey(x: jwk.x, curve: .ed25519), kid: JWKIdentifier(string: jwk.kid))
        let claims = try await keys.verify(session.accessToken, as: TestClaims.self)
        #expect(claims.sub.value == session.user.id)
        #expect(abs(claims.exp.value.timeIntervalSinceNow - 900) < 60)
    }

    @Test("an email is taken whatever its case, and a username once", arguments: [
        ("first@example.org", "same_name", "FIRST@example.org", "other_name", "email"),
        ("a@example.org", "same_name", "b@example.org", "same_name", "username"),
    ])
    func duplicates(email: String, username: String, secondEmail: String, secondUsername: String, field: String) throws {
        let auth = try AuthFixture()
        _ = try auth.client.call(AuthAPI.register, RegisterRequest(email: email, password: "password1", username: username))
        let error = auth.failure(AuthAPI.register, RegisterRequest(email: secondEmail, password: "password1", username: secondUsername))
        #expect(error?.summary == "already_exists \(field)")
    }

    @Test("register refuses fields that break the rules", arguments: [
        (RegisterRequest(email: "x@example.org", password: "short"), "password"),
        (RegisterRequest(email: "x@example.org", password: String(repeating: "p", count: 129)), "password"),
        (RegisterRequest(email: "not-an-email", password: "password1"), "email"),
        (RegisterRequest(email: "a@b", password: "password1"), "email"),
        (RegisterRequest(email: "x@example.org", password: "password1", username: "Ada"), "username"),
        (RegisterRequest(email: "x@example.org", password: "password1", username: "ab"), "username"),
        (RegisterRequest(email: "x@example.org", password: "password1", displayName: ""), "displayName"),
        (RegisterRequest(email: "x@example.org", password: "password1", phone: "call me"), "phone"),
        (RegisterRequest(email: "x@example.org", password: "password1",
                         attributes: Attributes(Dictionary(uniqueKeysWithValues: (0..<33).map { ("k\($0)", AttributeValue.bool(true)) }))),
         "attributes"),
    ])
    func registerValidation(request: RegisterRequest, field: String) throws {
        let auth = try AuthFixture()
        let error = auth.failure(AuthAPI.register, request)
        #expect(error?.code == .invalidArgument)
        #expect(error?.field == field)
    }

    @Test("login works by email in any case and by username")
    func login() throws {
        let auth = try AuthFixture()
        let registered = try auth.register("grace", username: "grace_h")
        for login in ["grace@example.org", "GRACE@Example.ORG", "grace_h"] {
            let session = try auth.client.call(AuthAPI.login, LoginRequest(login: login, password: "correct horse battery"))
            #expect(session.user.id == registered.user.id)
        }
    }

    @Test("a login makes a hash of another cost again at auth's; a failed login, or a password changed meanwhile, keeps what is stored")
    func loginRenewsHash() throws {
        let auth = try AuthFixture() // new hashes at the cheapest cost
        let store = auth.service.store
        let session = try auth.register("ada")
        let older = try PasswordHasher(parameters: ScryptParameters(logN: 11, r: 8, p: 1)).hash("correct horse battery")
        try store.database.pool.write { try store.setPasswordHash(userID: session.user.id, older, in: $0) }

        let wrong = auth.failure(AuthAPI.login, LoginRequest(login: "ada@example.org", password: "wrong password"))
        #expect(wrong?.code == .unauthenticated)
        #expect(try store.passwordHash(userID: session.user.id) == older)

        let login = LoginRequest(login: "ada@example.org", password: "correct horse battery")
        #expect(try auth.client.call(AuthAPI.login, login).user.id == session.user.id)
        let renewed = try #require(try store.passwordHash(userID: session.user.id))
        #expect(renewed.hasPrefix("$scrypt$ln=\(AuthService.Options.passwordCosts.lowerBound),r=8,p=1$"), "\(renewed)")
        #expect(try auth.client.call(AuthAPI.login, login).user.id == session.user.id, "the renewed hash verifies")
        #expect(try store.passwordHash(userID: session.user.id) == renewed, "a hash of the current cost stays")

        // A renewal computed from a hash that changed before it commits writes nothing.
        let written = try store.database.pool.write { db in
            try store.renewPasswordHash(userID: session.user.id, from: older, to: "$scrypt$stale", in: db)
        }
        #expect(!written)
        #expect(try store.passwordHash(userID: session.user.id) == renewed)
    }

    @Test("a failed login says the same whether or not the account exists")
    func loginFailureIsUniform() throws {
        let auth = try AuthFixture()
        try auth.register("linus")
        let wrongPassword = auth.failure(AuthAPI.login, LoginRequest(login: "linus@example.org", password: "wrong password"))
        let noAccount = auth.failure(AuthAPI.login, LoginRequest(login: "nobody@example.org", password: "wrong password"))
        #expect(wrongPassword?.code == .unauthenticated)
        #expect(wrongPassword == noAccount)
    }

    @Test("after 5 failed logins a login string is refused with rate_limited, without checking the password")
    func loginThrottle() throws {
        let auth = try AuthFixture()
        try auth.register("margaret")
        for _ in 0..<5 {
            #expect(auth.failure(AuthAPI.login, LoginRequest(login: "margaret@example.org", password: "guess"))?.code == .unauthenticated)
        }
        let limited = auth.failure(AuthAPI.login, LoginRequest(login: "Margaret@example.org", password: "correct horse battery"))
        #expect(limited?.code == .rateLimited)
        #expect((limited?.retryAfterMs ?? 0) > 14 * 60 * 1000)
        // The same rule for a login string that names no account.
        for _ in 0..<5 { _ = auth.failure(AuthAPI.login, LoginRequest(login: "ghost", password: "guess")) }
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "ghost", password: "guess"))?.code == .rateLimited)
        // Other accounts are not affected.
        try auth.register("other")
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "other@example.org", password: "correct horse battery")) == nil)
    }

    @Test("an anonymous user gets a session and no email")
    func anonymous() throws {
        let auth = try AuthFixture()
        let session = try auth.client.call(AuthAPI.anonymous, Empty())
        #expect(session.user.anonymous)
        #expect(session.user.email == nil)
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: session.accessToken).user.id == session.user.id)
    }

    @Test("upgrade keeps an anonymous user's id and makes them registered")
    func upgrade() throws {
        let auth = try AuthFixture()
        let anonymous = try auth.client.call(AuthAPI.anonymous, Empty())
        let upgraded = try auth.client.call(AuthAPI.upgrade, RegisterRequest(email: "seeker@example.org", password: "password1"),
                                            token: anonymous.accessToken)
        #expect(upgraded.user.id == anonymous.user.id)
        #expect(upgraded.user.anonymous == false)
        #expect(upgraded.user.email == "seeker@example.org")
        // The new session's token says registered; the user can log in.
        let login = try auth.client.call(AuthAPI.login, LoginRequest(login: "seeker@example.org", password: "password1"))
        #expect(login.user.id == anonymous.user.id)
        #expect(try auth.changes().last?.user?.anonymous == false)
    }

    @Test("upgrade refuses registered users, missing tokens and taken emails")
    func upgradeFailures() throws {
        let auth = try AuthFixture()
        let registered = try auth.register("taken")
        let body = RegisterRequest(email: "new@example.org", password: "password1")
        #expect(auth.failure(AuthAPI.upgrade, body, token: registered.accessToken)?.code == .permissionDenied)
        #expect(auth.failure(AuthAPI.upgrade, body)?.code == .unauthenticated)
        let anonymous = try auth.client.call(AuthAPI.anonymous, Empty())
        let taken = RegisterRequest(email: "taken@example.org", password: "password1")
        #expect(auth.failure(AuthAPI.upgrade, taken, token: anonymous.accessToken)?.summary == "already_exists email")
    }
}

@Suite("Sessions and refresh tokens", .ownThread)
struct SessionTests {
    @Test("refresh gives a new pair and spends the old refresh token")
    func refresh() throws {
        let auth = try AuthFixture()
        let first = try auth.register()
        let second = try auth.client.call(AuthAPI.refresh, RefreshRequest(refreshToken: first.refreshToken))
        #expect(second.user.id == first.user.id)
        #expect(second.refreshToken != first.refreshToken)
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: second.accessToken).user.id == first.user.id)
        let third = try auth.client.call(AuthAPI.refresh, RefreshRequest(refreshToken: second.refreshToken))
        #expect(third.refreshToken != second.refreshToken)
    }

    @Test("a spent refresh token used again revokes its whole family")
    func reuseRevokesFamily() throws {
        let auth = try AuthFixture()
        let first = try auth.register()
        let second = try auth.client.call(AuthAPI.refresh, RefreshRequest(refreshToken: first.refreshToken))
        // An attacker replays the stolen, spent token.
        let reuse = auth.failure(AuthAPI.refresh, RefreshRequest(refreshToken: first.refreshToken))
        #expect(reuse?.code == .unauthenticated)
        // The rightful holder's newer token and its access token no longer work either.
        #expect(auth.failure(AuthAPI.refresh, RefreshRequest(refreshToken: second.refreshToken))?.code == .unauthenticated)
        #expect(auth.failure(AuthAPI.me, Empty(), token: second.accessToken)?.code == .unauthenticated)
        // Other sessions of the user are untouched.
        let other = try auth.client.call(AuthAPI.login, LoginRequest(login: first.user.email!, password: "correct horse battery"))
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: other.accessToken).user.id == first.user.id)
    }

    @Test("an unknown refresh token is refused")
    func unknownRefreshToken() throws {
        let auth = try AuthFixture()
        #expect(auth.failure(AuthAPI.refresh, RefreshRequest(refreshToken: "not-a-token"))?.code == .unauthenticated)
        #expect(auth.failure(AuthAPI.refresh, RefreshRequest(refreshToken: ""))?.summary == "invalid_argument refreshToken")
    }

    @Test("logout ends the session: its refresh and access tokens stop working")
    func logout() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        _ = try auth.client.call(AuthAPI.logout, RefreshRequest(refreshToken: session.refreshToken))
        #expect(auth.failure(AuthAPI.refresh, RefreshRequest(refreshToken: session.refreshToken))?.code == .unauthenticated)
        #expect(auth.failure(AuthAPI.me, Empty(), token: session.accessToken)?.code == .unauthenticated)
        #expect(auth.failure(AuthAPI.logout, RefreshRequest(refreshToken: "never-issued"))?.code == .unauthenticated)
    }

    @Test("a password change revokes every other session and keeps the caller's")
    func passwordChange() throws {
        let auth = try AuthFixture()
        let phone = try auth.register("pat")
        let laptop = try auth.client.call(AuthAPI.login, LoginRequest(login: "pat@example.org", password: "correct horse battery"))
        let changed = try auth.client.call(AuthAPI.passwordChange,
                                           PasswordChangeRequest(oldPassword: "correct horse battery", newPassword: "new password 2"),
                                           token: phone.accessToken)
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: changed.accessToken).user.id == phone.user.id)
        #expect(auth.failure(AuthAPI.refresh, RefreshRequest(refreshToken: laptop.refreshToken))?.code == .unauthenticated)
        #expect(auth.failure(AuthAPI.me, Empty(), token: laptop.accessToken)?.code == .unauthenticated)
        // The old password no longer opens the account (the login itself exists: the new password works).
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "pat@example.org", password: "correct horse battery"))?.code
                == .unauthenticated)
        #expect(try auth.client.call(AuthAPI.login, LoginRequest(login: "pat@example.org", password: "new password 2")).user.id == phone.user.id)
    }

    @Test("a password change needs the right old password and a valid new one")
    func passwordChangeFailures() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let wrong = auth.failure(AuthAPI.passwordChange, PasswordChangeRequest(oldPassword: "nope", newPassword: "new password"),
                                 token: session.accessToken)
        #expect(wrong?.code == .unauthenticated)
        let short = auth.failure(AuthAPI.passwordChange, PasswordChangeRequest(oldPassword: "correct horse battery", newPassword: "short"),
                                 token: session.accessToken)
        #expect(short?.summary == "invalid_argument newPassword")
        let anonymous = try auth.client.call(AuthAPI.anonymous, Empty())
        let noPassword = auth.failure(AuthAPI.passwordChange, PasswordChangeRequest(oldPassword: "x", newPassword: "new password"),
                                      token: anonymous.accessToken)
        #expect(noPassword?.code == .permissionDenied)
    }
}

/// The claims as a third party decodes them, to check interoperability.
struct TestClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var iat: IssuedAtClaim
    var sid: String
    var anon: Bool
    func verify(using algorithm: some JWTAlgorithm) throws { try exp.verifyNotExpired() }
}
