import Contracts
import EdgeFixtures
import Foundation
import HereaboutsKit
import TestThreads
import Testing

/// What goes wrong on phones, through HereaboutsKit against `here up`'s processes.
@Suite("HereaboutsKit: failure paths", .ownThread)
struct FailurePathTests {
    @Test("an expired access token is refreshed once, however many calls meet it, and the calls go on")
    func expiredToken() async throws {
        let stack = try EdgeStack("kit-expired"), port = stack.port
        defer { stack.stop() }
        let reply = try stack.register("late@example.org")
        let expiring = try stack.tokenExpiring(in: 1, for: reply)
        // The kit believes the token good for an hour: the server's 401 is what
        // makes it refresh.
        let store = MemorySessionStore(Session(userId: reply.user.id, anonymous: false, accessToken: expiring,
                                               refreshToken: reply.refreshToken, accessTokenExpiresAt: Date().addingTimeInterval(3600)))
        try await Task.sleep(for: .seconds(2))
        let hereabouts = kit(port, store: store)
        // Refresh tokens rotate and a spent one ends its session: were the five
        // calls to refresh five times, the later ones would fail.
        let users = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<5 { group.addTask { try await hereabouts.me().id } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(users == Array(repeating: reply.user.id, count: 5))
        let renewed = try #require(try store.load())
        #expect(renewed.accessToken != expiring && renewed.refreshToken != reply.refreshToken)
        #expect(try await hereabouts.me().id == reply.user.id)
    }

    @Test("the edge stopped and started while the events stream is open: the stream reconnects and goes on")
    func edgeRestart() async throws {
        let stack = try EdgeStack("kit-restart"), port = stack.port
        defer { stack.stop() }
        let edge = try #require(servicePID("edge", in: stack.up.logText))
        let ann = kit(port), bea = kit(port)
        let annUser = try await ann.register(email: "ann@example.org", password: "password1")
        try await bea.register(email: "bea@example.org", password: "password1")
        var events = ann.events().makeAsyncIterator()
        #expect(try await firstEvent(&events, within: 20, where: \.isConnected) == .connected(reconnected: false))
        try await bea.sendMessage("before", to: annUser.id)
        #expect(try await firstEvent(&events, within: 20) { $0.chatText != nil }?.chatText == "before")

        // `here` starts the edge again when it dies.
        kill(edge, SIGKILL)
        #expect(try await firstEvent(&events, within: 90, where: \.isConnected) == .connected(reconnected: true))
        try await bea.sendMessage("after", to: annUser.id)
        #expect(try await firstEvent(&events, within: 20) { $0.chatText != nil }?.chatText == "after")
    }

    @Test("a write whose answer was lost on the way is sent again with its Idempotency-Key and applied once")
    func lostAnswer() async throws {
        let stack = try EdgeStack("kit-lost"), port = stack.port
        defer { stack.stop() }
        let proxy = try DroppingProxy(upstream: port, dropping: "POST /v1/posts ", times: 1)
        defer { proxy.stop() }
        let proxied = proxy.port
        let shop = kit(proxied)
        let owner = try await shop.register(email: "shop@example.org", password: "password1")
        let post = try await shop.createPost(PostDraft(kind: "offer", lat: 52.09, lon: 5.12, text: "Oak table", title: "Table"))
        #expect(proxy.dropped == 1)
        let posts = try await shop.posts(owner: owner.id).reduce(into: []) { $0.append($1.id) }
        #expect(posts == [post.id])
    }
}
