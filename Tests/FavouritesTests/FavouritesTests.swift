import Contracts
import Foundation
@testable import Favourites
import GRDB
import ServiceClient
import ServiceKit
import ServiceKitTesting
import StackFixtures
import TestThreads
import Testing
import Wire

/// Auth, catalogue and favourites in this process, favourites following both feeds.
final class FavouritesFixture {
    let upstream: Upstream
    private(set) var favourites: FavouritesService
    let client: ServiceClient

    init(environment extra: [String: String] = [:]) throws {
        upstream = try Upstream()
        var environment = upstream.stack.environment
        for (key, value) in extra { environment[key] = value }
        favourites = try FavouritesService(settings: try ServiceSettings(service: "favourites", overrides: .init(workers: 2),
                                                                         environment: environment),
                                           logger: TestStack.logger("favourites"))
        try upstream.stack.start(favourites)
        client = upstream.stack.client("favourites", timeout: 20)
    }

    func catchUp() throws {
        try upstream.wait(for: "favourites", to: try upstream.catalogueLastSeq()) { try favourites.postFollower.cursor() }
        try upstream.wait(for: "favourites", to: try upstream.authLastSeq()) { try favourites.userFollower.cursor() }
    }

    func posts(_ count: Int, token: String) throws -> [Post] {
        try (0..<count).map { try upstream.create(PostDraft(kind: "offer", title: "Offer \($0)", lat: 52, lon: 5), token: token) }
    }

    func add(_ postId: String, token: String) throws -> Int {
        try client.call(FavouritesAPI.add, FavouriteRequest(postId: postId), token: token).count
    }

    func all(token: String, pageSize: Int = 100) throws -> [String] {
        var ids: [String] = []
        var cursor: String?
        repeat {
            let page = try client.call(FavouritesAPI.list, FavouritesListRequest(limit: pageSize, cursor: cursor), token: token)
            ids += page.items.map(\.postId)
            cursor = page.nextCursor
        } while cursor != nil
        return ids
    }
}

@Suite("Favourites through the socket", .ownThread)
struct FavouritesTests {
    @Test("add is idempotent, remove too; list is newest first with total and pages that neither repeat nor skip; contains")
    func lists() throws {
        let fixture = try FavouritesFixture()
        let provider = try fixture.upstream.user(), seeker = try fixture.upstream.user()
        let posts = try fixture.posts(7, token: provider.token)
        try fixture.catchUp()

        for (index, post) in posts.enumerated() {
            #expect(try fixture.add(post.id, token: seeker.token) == index + 1)
        }
        #expect(try fixture.add(posts[2].id, token: seeker.token) == 7)  // again: still one
        let expected = posts.reversed().map(\.id)
        let first = try fixture.client.call(FavouritesAPI.list, FavouritesListRequest(limit: 3), token: seeker.token)
        #expect(first.total == 7 && first.items.map(\.postId) == Array(expected.prefix(3)) && first.nextCursor != nil)
        #expect(abs(first.items[0].addedAt.timeIntervalSinceNow) < 60)
        for size in [1, 2, 3, 7, 100] {
            #expect(try fixture.all(token: seeker.token, pageSize: size) == expected, "page size \(size)")
        }
        #expect(try fixture.client.call(FavouritesAPI.remove, FavouriteRequest(postId: posts[0].id), token: seeker.token).count == 6)
        #expect(try fixture.client.call(FavouritesAPI.remove, FavouriteRequest(postId: posts[0].id), token: seeker.token).count == 6)
        let contains = try fixture.client.call(FavouritesAPI.contains,
                                               FavouritesContainsRequest(postIds: [posts[0].id, posts[1].id, "nope"]), token: seeker.token)
        #expect(contains.contains == [posts[0].id: false, posts[1].id: true, "nope": false])
        // Each user has their own list.
        #expect(try fixture.all(token: provider.token).isEmpty)
        // Re-adding puts it first again (it is a new save).
        _ = try fixture.add(posts[0].id, token: seeker.token)
        #expect(try fixture.all(token: seeker.token).first == posts[0].id)
    }

    @Test("an unknown post is not_found; a deleted post leaves every list; a deleted user's list goes and their token is refused")
    func following() throws {
        let fixture = try FavouritesFixture()
        let provider = try fixture.upstream.user(), ann = try fixture.upstream.user(), bob = try fixture.upstream.user()
        let posts = try fixture.posts(3, token: provider.token)
        try fixture.catchUp()
        #expect(fixture.client.failure(FavouritesAPI.add, FavouriteRequest(postId: "noSuchPost"), token: ann.token)?.summary
                == "not_found postId")
        for post in posts {
            _ = try fixture.add(post.id, token: ann.token)
            _ = try fixture.add(post.id, token: bob.token)
        }
        _ = try fixture.upstream.catalogueClient.call(CatalogueAPI.delete, IDRequest(id: posts[1].id), token: provider.token)
        try fixture.catchUp()
        #expect(try fixture.all(token: ann.token) == [posts[2].id, posts[0].id])
        #expect(try fixture.all(token: bob.token) == [posts[2].id, posts[0].id])
        #expect(fixture.client.failure(FavouritesAPI.add, FavouriteRequest(postId: posts[1].id), token: ann.token)?.code == .notFound)

        _ = try fixture.upstream.authClient.call(AuthAPI.delete, DeleteRequest(password: Upstream.password), token: ann.token)
        try fixture.catchUp()
        #expect(fixture.client.failure(FavouritesAPI.list, FavouritesListRequest(), token: ann.token)?.code == .unauthenticated)
        let rows = try fixture.favourites.store.database.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM favourite WHERE user_id = ?", arguments: [ann.id])
        }
        #expect(rows == 0)
        #expect(try fixture.all(token: bob.token).count == 2)
    }

    @Test("an anonymous seeker keeps their favourites when they register (same user id)")
    func upgrade() throws {
        let fixture = try FavouritesFixture()
        let provider = try fixture.upstream.user()
        let posts = try fixture.posts(2, token: provider.token)
        let anonymous = try fixture.upstream.anonymous()
        try fixture.catchUp()
        _ = try fixture.add(posts[0].id, token: anonymous.token)
        _ = try fixture.add(posts[1].id, token: anonymous.token)
        let upgraded = try fixture.upstream.authClient.call(AuthAPI.upgrade, RegisterRequest(email: "seeker@example.org",
                                                                                             password: Upstream.password),
                                                            token: anonymous.token)
        #expect(upgraded.user.id == anonymous.id)
        try fixture.catchUp()
        #expect(try fixture.all(token: upgraded.accessToken) == [posts[1].id, posts[0].id])
    }

    @Test("at most 10,000 per user: the next is too_large, and nothing is lost")
    func limit() throws {
        let fixture = try FavouritesFixture()
        let provider = try fixture.upstream.user(), seeker = try fixture.upstream.user()
        let posts = try fixture.posts(2, token: provider.token)
        try fixture.catchUp()
        // Fill the list to the limit in the store directly: 10,000 posts through
        // catalogue would only make this test slow.
        try fixture.favourites.store.database.pool.write { db in
            for index in 0..<(FavouriteRules.maxPerUser - 1) {
                try db.execute(sql: "INSERT INTO favourite (user_id, post_id, added_at) VALUES (?, ?, 0)",
                               arguments: [seeker.id, "filler\(index)"])
            }
        }
        #expect(try fixture.add(posts[0].id, token: seeker.token) == FavouriteRules.maxPerUser)
        let error = fixture.client.failure(FavouritesAPI.add, FavouriteRequest(postId: posts[1].id), token: seeker.token)
        #expect(error?.code == .tooLarge)
        #expect(try fixture.add(posts[0].id, token: seeker.token) == FavouriteRules.maxPerUser)  // already there: fine
        #expect(try fixture.client.call(FavouritesAPI.list, FavouritesListRequest(limit: 1), token: seeker.token).total
                == FavouriteRules.maxPerUser)
    }

}

@Suite("Favourites' readiness", .ownThread)
struct FavouritesReadinessTests {
    @Test("favourites is not ready while it cannot follow catalogue's feed, and says which feed")
    func notReadyWithoutCatalogue() throws {
        let fixture = try FavouritesFixture(environment: [
            ServiceEndpoints.requestsVariable("catalogue"): "ipc:///tmp/hereabouts-no-catalogue-\(Identifier.random(count: 6)).sock",
        ])
        _ = try fixture.upstream.user()
        let deadline = Date().addingTimeInterval(10)
        var ready = try fixture.client.call(HealthAPI.ready("favourites"), Empty())
        // auth's feed is read to its end within a poll; catalogue's never is.
        while Date() < deadline, ready.feeds.first(where: { $0.feed == "auth" })?.ready != true {
            Thread.sleep(forTimeInterval: 0.1)
            ready = try fixture.client.call(HealthAPI.ready("favourites"), Empty())
        }
        #expect(!ready.ready)
        #expect(ready.database?.writable == true)
        #expect(ready.feeds.map(\.feed) == ["auth", "catalogue"])
        #expect(ready.feeds.map(\.ready) == [true, false])
        #expect(ready.feeds.last?.secondsSinceCaughtUp == nil)
        // Liveness is another matter: it answers.
        #expect(try fixture.client.call(HealthAPI.health("favourites"), Empty()).status == "ok")
    }
}
