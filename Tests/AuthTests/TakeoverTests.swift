@testable import Auth
import Contracts
import Foundation
import ServiceClient
import ServiceKit
import ServiceKitTesting
import TestThreads
import Testing
import Wire

@Suite("What a replayed or stale request cannot take", .ownThread)
struct TakeoverTests {
    @Test("a second auth.anonymous with the same id makes a new user: it never hands over the first one's session")
    func anonymousReplay() throws {
        let auth = try AuthFixture()
        let first = try auth.client.call(AuthAPI.anonymous, Empty(), id: "weak-id-1")
        // Another client, by a weak id generator or having seen the id, sends the same one.
        let stranger = try auth.client.call(AuthAPI.anonymous, Empty(), id: "weak-id-1")
        #expect(stranger.user.id != first.user.id)
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: stranger.accessToken).user.id == stranger.user.id)
        // The first client's session goes on as it was.
        #expect(try auth.client.call(AuthAPI.refresh, RefreshRequest(refreshToken: first.refreshToken)).user.id == first.user.id)
    }

    @Test("a replayed auth.refresh, same id and same token, counts as reuse and ends the session")
    func refreshReplay() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let body = RefreshRequest(refreshToken: session.refreshToken)
        let rotated = try auth.client.call(AuthAPI.refresh, body, id: "refresh-1")
        // Whoever holds the spent token and its request id gets nothing…
        #expect(auth.failure(AuthAPI.refresh, body, id: "refresh-1")?.code == .unauthenticated)
        // …and the session is over for everyone: the rotated pair is dead too.
        #expect(auth.failure(AuthAPI.refresh, RefreshRequest(refreshToken: rotated.refreshToken))?.code == .unauthenticated)
        #expect(auth.failure(AuthAPI.me, Empty(), token: rotated.accessToken)?.code == .unauthenticated)
    }

    @Test("an access token from before an upgrade cannot upgrade the account again")
    func staleUpgrade() throws {
        let auth = try AuthFixture()
        let anonymous = try auth.client.call(AuthAPI.anonymous, Empty())
        let upgraded = try auth.client.call(AuthAPI.upgrade, RegisterRequest(email: "owner@example.org", password: "owner password"),
                                            token: anonymous.accessToken)
        #expect(upgraded.user.anonymous == false)
        // The old token still says anonymous for up to 15 minutes.
        let takeover = auth.failure(AuthAPI.upgrade, RegisterRequest(email: "thief@example.org", password: "thief password"),
                                    token: anonymous.accessToken)
        #expect(takeover?.code == .permissionDenied)
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: upgraded.accessToken).user.email == "owner@example.org")
        #expect(try auth.client.call(AuthAPI.login, LoginRequest(login: "owner@example.org", password: "owner password")).user.id
                == anonymous.user.id)
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "thief@example.org", password: "thief password"))?.code == .unauthenticated)
    }
}

@Suite("Budgets of wrong passwords", .ownThread)
struct PasswordBudgetTests {
    private func login(_ auth: AuthFixture, _ login: String, _ password: String, from origin: String) -> ErrorCode? {
        do {
            _ = try auth.client.call(AuthAPI.login, LoginRequest(login: login, password: password), origin: origin)
            return nil
        } catch {
            return (error as? ServiceError)?.code ?? .internal
        }
    }

    @Test("five wrong passwords from one address do not lock the account for its owner elsewhere")
    func noLockOut() throws {
        let auth = try AuthFixture()
        try auth.register("victim")
        for _ in 0..<5 { #expect(login(auth, "victim@example.org", "guess", from: "203.0.113.9") == .unauthenticated) }
        #expect(login(auth, "victim@example.org", "correct horse battery", from: "203.0.113.9") == .rateLimited)
        #expect(login(auth, "victim@example.org", "correct horse battery", from: "198.51.100.7") == nil)
    }

    @Test("one address guessing across accounts runs out after 50 wrong passwords")
    func perOrigin() throws {
        let auth = try AuthFixture()
        try auth.register("target")
        for index in 0..<50 { _ = login(auth, "nobody\(index)@example.org", "guess", from: "203.0.113.10") }
        #expect(login(auth, "target@example.org", "correct horse battery", from: "203.0.113.10") == .rateLimited)
        #expect(login(auth, "target@example.org", "correct horse battery", from: "203.0.113.11") == nil)
    }

    @Test("ten addresses × five wrong passwords do not lock the owner out where they signed in before")
    func strangersCannotLock() throws {
        let auth = try AuthFixture()
        _ = try auth.client.call(AuthAPI.register, RegisterRequest(email: "popular@example.org", password: "correct horse battery"),
                                 origin: "198.51.100.7")
        for address in 0..<10 {
            for _ in 0..<5 { _ = login(auth, "popular@example.org", "guess", from: "10.0.0.\(address)") }
        }
        #expect(login(auth, "popular@example.org", "guess", from: "192.0.2.1") == .rateLimited, "strangers are held back")
        #expect(login(auth, "popular@example.org", "correct horse battery", from: "198.51.100.7") == nil)
        // A login makes its address known too; an IPv6 client is known by its /64.
        let home = "2001:db8:77:1::10"
        #expect(login(auth, "popular@example.org", "correct horse battery", from: home) == .rateLimited, "a new place waits for now")
    }

    @Test("strangers are slowed, not locked: past ten failures each waits twice as long, and the owner from a new place gets in after the wait")
    func strangersSlowed() throws {
        let auth = try AuthFixture()
        try auth.register("slowed")
        for index in 0..<10 { #expect(login(auth, "slowed@example.org", "guess", from: "10.1.0.\(index)") == .unauthenticated) }
        let refused = auth.failure(AuthAPI.login, LoginRequest(login: "slowed@example.org", password: "guess"), origin: "10.1.0.99")
        #expect(refused?.code == .rateLimited)
        let wait = try #require(refused?.retryAfterMs)
        #expect((1_000...2_000).contains(wait), "the first wait is two seconds: \(wait) ms")
        Thread.sleep(forTimeInterval: Double(wait) / 1000)
        // The owner, from an address it never signed in from, is in once the wait has passed.
        #expect(login(auth, "slowed@example.org", "correct horse battery", from: "203.0.113.50") == nil)
        // Each failure after that waits twice as long as the one before.
        #expect(login(auth, "slowed@example.org", "guess", from: "10.1.0.100") == .unauthenticated)
        let longer = auth.failure(AuthAPI.login, LoginRequest(login: "slowed@example.org", password: "guess"), origin: "10.1.0.101")
        #expect(longer?.code == .rateLimited && (3_000...4_000).contains(longer?.retryAfterMs ?? 0), "\(String(describing: longer))")
    }

    @Test("the waits double from two seconds to the one-minute cap, and the hour's bound is what PROTOCOL.md states")
    func strangersBound() throws {
        let budget = LoginPolicy().budgets(account: "user:u", origin: "10.0.0.1", known: false).last!
        let waits = (10...17).map { count in
            budget.reopens(count: count, oldestOver: 0, latest: 1_000, window: 900, now: 1_000).map { $0 - 1_000 } ?? 0
        }
        #expect(waits == [2, 4, 8, 16, 32, 60, 60, 60])
        #expect(budget.reopens(count: 9, oldestOver: 0, latest: 1_000, window: 900, now: 1_000) == nil)
        #expect(LoginPolicy().budgets(account: "user:u", origin: "10.0.0.1", known: true).count == 2, "a known origin skips the strangers' budget")
        let bound = LoginPolicy().strangerGuessesPerHour
        #expect(bound == 74)
        let protocolText = try String(contentsOf: URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Docs/PROTOCOL.md"), encoding: .utf8)
        #expect(protocolText.contains("at most \(bound) wrong passwords per account per hour"))
    }

    @Test("twenty addresses spending their budgets across accounts stop no one else's login")
    func noGlobalLock() throws {
        let auth = try AuthFixture()
        try auth.register("bystander")
        for address in 0..<20 {
            for index in 0..<50 { _ = login(auth, "nobody\(index)@example.org", "guess", from: "10.2.\(address).1") }
        }
        #expect(login(auth, "nobody0@example.org", "guess", from: "10.2.0.1") == .rateLimited)
        #expect(login(auth, "bystander@example.org", "correct horse battery", from: "192.0.2.44") == nil)
    }

    @Test("wrong old passwords in auth.password.change and wrong passwords in auth.delete count too")
    func otherOpsCount() throws {
        let auth = try AuthFixture()
        let session = try auth.register("changer")
        for _ in 0..<3 {
            #expect(auth.failure(AuthAPI.passwordChange, PasswordChangeRequest(oldPassword: "wrong pass", newPassword: "new password"),
                                 token: session.accessToken)?.code == .unauthenticated)
        }
        for _ in 0..<2 {
            #expect(auth.failure(AuthAPI.delete, DeleteRequest(password: "wrong pass"), token: session.accessToken)?.code == .unauthenticated)
        }
        // Five wrong passwords from here: the right one is refused until the window moves.
        #expect(auth.failure(AuthAPI.delete, DeleteRequest(password: "correct horse battery"), token: session.accessToken)?.code
                == .rateLimited)
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "changer@example.org", password: "correct horse battery"))?.code
                == .rateLimited)
    }

    @Test("a retried login id is no way around the budget: its password is checked and counted like a login")
    func replayCounts() throws {
        let auth = try AuthFixture()
        try auth.register("known")
        // The owner logs in; the id is seen by someone else.
        _ = try auth.client.call(AuthAPI.login, LoginRequest(login: "known@example.org", password: "correct horse battery"), id: "seen-id")
        for _ in 0..<5 {
            #expect(auth.failure(AuthAPI.login, LoginRequest(login: "known@example.org", password: "guess"), id: "seen-id")?.code
                    == .unauthenticated)
        }
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "known@example.org", password: "correct horse battery"),
                             id: "seen-id")?.code == .rateLimited)
    }

    @Test("wrong passwords sent at once are all counted: no more than five get their password checked")
    func concurrentGuesses() throws {
        let auth = try AuthFixture(hashWorkers: 4)
        try auth.register("raced")
        let endpoint = auth.stack.endpoint("auth")
        let codes = ResultsBox<String>()
        let threads = (0..<12).map { _ in
            ServiceThread(name: "guess") {
                let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 30, tries: 1)
                defer { client.close() }
                do {
                    _ = try client.call(AuthAPI.login, LoginRequest(login: "raced@example.org", password: "guess"))
                    codes.append(.success("ok"))
                } catch {
                    codes.append(.success((error as? ServiceError)?.code.rawValue ?? "other"))
                }
            }
        }
        threads.forEach { $0.join() }
        let all = try codes.all.map { try $0.get() }
        #expect(all.filter { $0 == "unauthenticated" }.count == 5)
        #expect(all.filter { $0 == "rate_limited" }.count == 7)
    }
}
