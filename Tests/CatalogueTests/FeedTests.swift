import Catalogue
import Contracts
import Foundation
import GRDB
import ServiceClient
import ServiceKit
import ServiceKitTesting
import TestThreads
import Testing
import Wire
import ZeroMQ

@Suite("The catalogue feed", .ownThread)
struct FeedTests {
    @Test("after 1,000 mixed changes a follower from seq 0 ends with exactly the current posts")
    func rebuildFromZero() throws {
        let catalogue = try CatalogueFixture()
        let owners = [try catalogue.user(), try catalogue.user()]
        var live: [String: (owner: Int, post: Post)] = [:]
        var generator = SystemRandomNumberGenerator()
        var changes = 0
        while changes < 1000 {
            let roll = Int.random(in: 0..<10, using: &generator)
            let owner = Int.random(in: 0..<2, using: &generator)
            if roll < 4 || live.isEmpty {
                let post = try catalogue.create(.sample("Post \(changes)"), token: owners[owner].token)
                live[post.id] = (owner, post)
            } else if roll < 7, let (id, entry) = live.randomElement(using: &generator) {
                let post = try catalogue.client.call(CatalogueAPI.update, UpdatePostRequest(id: id, changes: ["title": .string("Edit \(changes)")]),
                                                     token: owners[entry.owner].token).post
                live[id] = (entry.owner, post)
            } else if roll < 8, let (id, _) = live.randomElement(using: &generator) {
                _ = try catalogue.client.call(CatalogueAPI.rate, SetRatingRequest(postId: id, stars: 1 + changes % 5), token: owners[owner].token)
                live[id]?.post = try catalogue.client.call(CatalogueAPI.get, IDRequest(id: id)).post
            } else if let (id, entry) = live.randomElement(using: &generator) {
                _ = try catalogue.client.call(CatalogueAPI.delete, IDRequest(id: id), token: owners[entry.owner].token)
                live[id] = nil
            }
            changes += 1
        }

        // A follower in a database of its own, in batches of 100.
        let (follower, database) = try mirror(of: catalogue)
        _ = try follower.catchUp(using: catalogue.stack.client("catalogue"))
        let mirrored = try database.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT id, json FROM mirror").map {
                ($0[0] as String, try JSONValueDecoder().decode(Post.self, from: Data(($0[1] as String).utf8)))
            }
        }
        #expect(Dictionary(uniqueKeysWithValues: mirrored) == live.mapValues(\.post))
        // Compaction: one entry per post ever touched, however often it changed.
        let feedEntries = try catalogue.changes()
        #expect(Set(feedEntries.map(\.postId)).count == feedEntries.count)
    }

    @Test("a source put back behind its follower's cursor: the follower replays the feed and drops what the source no longer has")
    func sourceRestoredBehindCursor() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let kept = try (0..<3).map { try catalogue.create(.sample("Kept \($0)"), token: owner.token) }
        let (follower, database) = try mirror(of: catalogue)
        let client = catalogue.stack.client("catalogue")
        _ = try follower.catchUp(using: client)
        let head = try follower.cursor()
        // What a follower holds when its source was restored from a copy older than the
        // follower: posts made after the copy, and a cursor past the source's feed.
        try database.pool.write { db in
            try db.execute(sql: "INSERT INTO mirror (id, json) VALUES ('ghost-1', '{}'), ('ghost-2', '{}')")
            try FeedCursor.set("catalogue", seq: head + 40, in: db)
        }
        _ = try follower.catchUp(using: client, maxBatches: 1)
        #expect(try follower.cursor() <= head, "it went back to the start of the feed")
        _ = try follower.catchUp(using: client)
        let ids = try database.pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM mirror ORDER BY id") }
        #expect(ids == kept.map(\.id).sorted())
        #expect(try follower.cursor() == head)
        // The replay is over: a later change is followed as usual, nothing replayed again.
        let later = try catalogue.create(.sample("Later"), token: owner.token)
        #expect(try follower.catchUp(using: client) == 1)
        #expect(try database.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM feed_replay") } == 0)
        #expect(try database.pool.read { db in try String.fetchAll(db, sql: "SELECT id FROM mirror") }.contains(later.id))
    }

    @Test("a source restored from a backup that has since passed the follower's cursor: the epoch tells, and the follower replays")
    func sourceRestoredPastCursor() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let before = try (0..<2).map { try catalogue.create(.sample("Before \($0)"), token: owner.token) }
        let (follower, database) = try mirror(of: catalogue)
        let client = catalogue.stack.client("catalogue")
        _ = try follower.catchUp(using: client)
        let backup = try client.call(BackupAPI.backup("catalogue"), BackupRequest(name: "epoch-test"))
        let lost = try (0..<2).map { try catalogue.create(.sample("Lost \($0)"), token: owner.token) }
        _ = try follower.catchUp(using: client)
        let cursor = try follower.cursor()

        // Catalogue stopped, its file replaced by the backup's copy, started again; then
        // more writes than it lost, so its feed's head passes the follower's cursor.
        catalogue.catalogue.stop()
        let file = catalogue.catalogue.settings.databasePath
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file + suffix) }
        try FileManager.default.copyItem(atPath: backup.file, toPath: file)
        let restored = try CatalogueService(settings: catalogue.catalogue.settings, logger: TestStack.logger("catalogue"))
        try catalogue.stack.start(restored)
        var after: [Post] = []
        while try client.call(CatalogueAPI.changes, ChangesRequest(after: 0, limit: 1)).headSeq ?? 0 <= cursor + 2 {
            after.append(try catalogue.create(.sample("After \(after.count)"), token: owner.token))
        }
        _ = try follower.catchUp(using: client)
        let ids = try database.pool.read { db in Set(try String.fetchAll(db, sql: "SELECT id FROM mirror")) }
        #expect(ids == Set((before + after).map(\.id)), "lost: \(ids.intersection(lost.map(\.id)).count), after missing: \(Set(after.map(\.id)).subtracting(ids).count)")
    }

    /// A follower of `catalogue.changes` mirroring posts as JSON in a database of its own.
    private func mirror(of catalogue: CatalogueFixture) throws -> (ChangeFollower<PostChange>, ServiceDatabase) {
        let database = try ServiceDatabase(path: catalogue.stack.directory.appendingPathComponent("mirror-\(UUID().uuidString).sqlite").path) { migrator in
            migrator.registerMigration("mirror") { db in
                try db.execute(sql: "CREATE TABLE mirror (id TEXT PRIMARY KEY, json TEXT NOT NULL)")
            }
        }
        let feed = ChangeFollower<PostChange>.Feed(name: "catalogue", requestEndpoint: catalogue.stack.endpoint("catalogue"),
                                                   eventsEndpoint: nil, op: CatalogueAPI.changes, batchSize: 100)
        let follower = ChangeFollower(feed: feed, database: database, logger: TestStack.logger("mirror"),
                                      held: { db in try String.fetchAll(db, sql: "SELECT id FROM mirror") }) { changes, db in
            for change in changes {
                switch change.type {
                case .upserted:
                    let json = String(decoding: try JSONValueEncoder().encodeData(change.post!), as: UTF8.self)
                    try db.execute(sql: "INSERT OR REPLACE INTO mirror (id, json) VALUES (?, ?)", arguments: [change.postId, json])
                case .deleted:
                    try db.execute(sql: "DELETE FROM mirror WHERE id = ?", arguments: [change.postId])
                }
            }
        }
        return (follower, database)
    }

    @Test("a follower wakes on the PUB notice and sees a new post within moments")
    func notices() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let subscriber = try ZeroMQ.Context.shared.makeSocket(.subscribe)
        defer { subscriber.close() }
        try subscriber.set(.subscribe(Data("catalogue.changed/".utf8)))
        try subscriber.set(.receiveTimeout(milliseconds: 5000))
        try subscriber.connect(catalogue.stack.eventsEndpoint("catalogue")!)
        Thread.sleep(forTimeInterval: 0.2)
        _ = try catalogue.create(.sample(), token: owner.token)
        let frames = try #require(try subscriber.receiveMessage())
        #expect(frames.first == Data("catalogue.changed/".utf8))
        let notice = try JSONValueDecoder().decode(ChangeNotice.self, from: frames[1])
        #expect(notice.seq == (try catalogue.changes().last?.seq))
    }
}

@Suite("Users deleted in auth", .ownThread)
struct DeletedUserTests {
    @Test("a deleted user's posts, ratings and trips go, each post deletion on the feed, and their token is refused")
    func deletion() throws {
        let catalogue = try CatalogueFixture()
        let leaving = try catalogue.user()
        let staying = try catalogue.user()
        let theirPost = try catalogue.create(.sample("Theirs"), token: leaving.token)
        let otherPost = try catalogue.create(.sample("Other"), token: staying.token)
        _ = try catalogue.client.call(CatalogueAPI.rate, SetRatingRequest(postId: otherPost.id, stars: 1), token: leaving.token)
        _ = try catalogue.client.call(CatalogueAPI.rate, SetRatingRequest(postId: otherPost.id, stars: 5), token: staying.token)
        let theirTrip = try catalogue.client.call(CatalogueAPI.createTrip, CreateTripRequest(title: "T", city: "Oslo", countryCode: "NO"),
                                                  token: leaving.token).trip
        let sharedTrip = try catalogue.client.call(CatalogueAPI.createTrip, CreateTripRequest(title: "S", city: "Bergen", countryCode: "NO"),
                                                   token: staying.token).trip
        try catalogue.catchUpWithAuth()
        _ = try catalogue.client.call(CatalogueAPI.invite, InviteRequest(id: sharedTrip.id, userId: leaving.id), token: staying.token)

        _ = try catalogue.authClient.call(AuthAPI.delete, DeleteRequest(password: "correct horse battery"), token: leaving.token)
        try catalogue.catchUpWithAuth()

        #expect(catalogue.failure(CatalogueAPI.get, IDRequest(id: theirPost.id))?.code == .notFound)
        #expect(try catalogue.client.call(CatalogueAPI.get, IDRequest(id: otherPost.id)).post.rating == Rating(average: 5, count: 1))
        #expect(catalogue.failure(CatalogueAPI.getTrip, IDRequest(id: theirTrip.id), token: staying.token)?.code == .notFound)
        #expect(try catalogue.client.call(CatalogueAPI.getTrip, IDRequest(id: sharedTrip.id), token: staying.token).trip.members?.map(\.userId) == [staying.id])
        let feed = try catalogue.changes()
        #expect(feed.contains { $0.postId == theirPost.id && $0.type == .deleted })
        #expect(feed.last { $0.postId == otherPost.id }?.post?.rating.count == 1)
        // The access token is still unexpired, but its user is gone.
        #expect(catalogue.failure(CatalogueAPI.create, CreatePostRequest(.sample()), token: leaving.token)?.code == .unauthenticated)
    }
}

@Suite("Per-user write limits", .ownThread)
struct RateLimitTests {
    @Test("a user over the write rate is refused with rate_limited and a retry time; others are not")
    func rateLimited() throws {
        let catalogue = try CatalogueFixture(rateLimit: "1/3")
        let busy = try catalogue.user()
        let calm = try catalogue.user()
        var codes: [String] = []
        for index in 0..<6 {
            codes.append(catalogue.failure(CatalogueAPI.create, CreatePostRequest(.sample("P\(index)")), token: busy.token)?.code.rawValue ?? "ok")
        }
        #expect(Array(codes.prefix(3)) == ["ok", "ok", "ok"])
        #expect(codes.suffix(3).allSatisfy { $0 == "rate_limited" })
        let error = catalogue.failure(CatalogueAPI.create, CreatePostRequest(.sample()), token: busy.token)
        #expect((error?.retryAfterMs ?? 0) > 0)
        #expect(catalogue.failure(CatalogueAPI.create, CreatePostRequest(.sample()), token: calm.token) == nil)
        // Reads are not limited.
        #expect(catalogue.failure(CatalogueAPI.list, ListPostsRequest()) == nil)
    }
}
