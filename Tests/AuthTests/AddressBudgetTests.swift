import Contracts
import Foundation
import ServiceKit
import ServiceKitTesting
import TestThreads
import Testing
import Wire

/// What one client address may do however many accounts it makes: budgets counted by
/// the end user's address the edge relays (an IPv6 client by its /64).
@Suite("New accounts and lookups by address", .ownThread)
struct AddressBudgetTests {
    private func register(_ auth: AuthFixture, _ email: String, from origin: String?) -> ServiceError? {
        auth.failure(AuthAPI.register, RegisterRequest(email: email, password: "correct horse battery"), origin: origin)
    }

    @Test("one address makes at most twenty accounts at once, registrations and upgrades together; other addresses are not held back")
    func registrations() throws {
        let auth = try AuthFixture()
        for index in 0..<20 { #expect(register(auth, "a\(index)@example.org", from: "198.51.100.1") == nil) }
        let refused = register(auth, "a20@example.org", from: "198.51.100.1")
        #expect(refused?.code == .rateLimited && (refused?.retryAfterMs ?? 0) > 30_000, "\(String(describing: refused))")
        // An upgrade is a new account too, and shares the budget.
        let anonymous = try auth.client.call(AuthAPI.anonymous, Empty(), origin: "198.51.100.9")
        #expect(auth.failure(AuthAPI.upgrade, RegisterRequest(email: "up@example.org", password: "correct horse battery"),
                             token: anonymous.accessToken, origin: "198.51.100.1")?.code == .rateLimited)
        #expect(register(auth, "b@example.org", from: "198.51.100.2") == nil)
        // An operator's `here` relays no address, and is not counted.
        #expect(register(auth, "operator@example.org", from: nil) == nil)
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "a20@example.org", password: "correct horse battery"))?.code
                == .unauthenticated, "a refused registration made no account")
    }

    @Test("anonymous accounts have a budget of their own per address")
    func anonymous() throws {
        let auth = try AuthFixture()
        for _ in 0..<20 { _ = try auth.client.call(AuthAPI.anonymous, Empty(), origin: "203.0.113.5") }
        #expect(auth.failure(AuthAPI.anonymous, Empty(), origin: "203.0.113.5")?.code == .rateLimited)
        #expect(register(auth, "still@example.org", from: "203.0.113.5") == nil, "registrations are counted apart")
        #expect(auth.failure(AuthAPI.anonymous, Empty(), origin: "203.0.113.6") == nil)
    }

    @Test("an IPv6 client is counted by its /64, whichever of its addresses it sends from")
    func ipv6() throws {
        let auth = try AuthFixture()
        for index in 1...20 { #expect(register(auth, "v\(index)@example.org", from: "2001:db8:5:6::\(String(index, radix: 16))") == nil) }
        #expect(register(auth, "v21@example.org", from: "2001:db8:5:6:ffff:1:2:3")?.code == .rateLimited)
        #expect(register(auth, "v22@example.org", from: "2001:db8:5:7::1") == nil)
    }

    @Test("lookups by email: ten a minute per address, so fresh accounts do not get more")
    func lookups() throws {
        let auth = try AuthFixture()
        try auth.register("buddy")
        var answered = 0
        for index in 0..<11 {
            // A fresh account for every lookup, all from one address.
            let fresh = try auth.client.call(AuthAPI.register, RegisterRequest(email: "fresh\(index)@example.org", password: "correct horse battery"),
                                             origin: "192.0.2.\(index)")
            if auth.failure(AuthAPI.usersLookup, UsersLookupRequest(email: "buddy@example.org"), token: fresh.accessToken,
                            origin: "198.51.100.77") == nil {
                answered += 1
            }
        }
        #expect(answered == 10)
        let elsewhere = try auth.register("elsewhere")
        #expect(auth.failure(AuthAPI.usersLookup, UsersLookupRequest(email: "buddy@example.org"), token: elsewhere.accessToken,
                             origin: "198.51.100.78") == nil)
    }
}
