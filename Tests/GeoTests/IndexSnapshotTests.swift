import Contracts
import Foundation
@testable import Geo
import GRDB
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Testing
import Wire

@Suite("Geo's index snapshot", .ownThread)
struct IndexSnapshotTests {
    /// Searches whose answers use every part of the index: words and prefixes,
    /// tags, kinds, opening hours, every sort, several trees and dead slots.
    private static func answers(_ geo: GeoFixture) throws -> [String] {
        let requests = [
            SearchRequest(lat: 52.09, lon: 5.12, radius: 50_000, q: "burger"),
            SearchRequest(lat: 52.09, lon: 5.12, radius: 50_000, q: "smash bur"),
            SearchRequest(lat: 52.09, lon: 5.12, radius: 50_000, tags: ["vegan"]),
            SearchRequest(lat: 52.09, lon: 5.12, radius: 50_000, kinds: ["sight"], sort: .title),
            SearchRequest(lat: 52.09, lon: 5.12, radius: 50_000, openNow: true, at: Timestamp.parse("2026-11-23T12:00:00Z")),
            SearchRequest(lat: 52.09, lon: 5.12, radius: 500_000, sort: .newest, limit: 100),
            // Where the first imported posts are.
            SearchRequest(lat: -47.99, lon: -126.99, radius: 500_000, q: "snapshot item", limit: 100),
        ]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return try requests.map { String(decoding: try encoder.encode(try geo.client.call(GeoAPI.search, $0)), as: UTF8.self) }
    }

    @Test("a clean stop writes the index and the next start reads it, answering every search the same; a damaged file or one the database no longer matches is not used")
    func snapshot() throws {
        let geo = try GeoFixture()
        let owner = try geo.user()
        try GeoServiceTests.importPosts(geo.catalogueClient, owner: owner.token, count: 1_500, prefix: "snapshot")
        let listed = try geo.catalogueClient.call(CatalogueAPI.list, ListPostsRequest(limit: 20)).posts
        for post in listed.prefix(10) {
            _ = try geo.catalogueClient.call(CatalogueAPI.delete, IDRequest(id: post.id), token: owner.token)
        }
        _ = try geo.create(PostDraft(kind: "restaurant", title: "Burger Bar", text: "Smash burgers", lat: 52.0920, lon: 5.1200,
                                     tags: ["Vegan"], hours: "Mo-Su 11:00-22:00", timezone: "Europe/Amsterdam"), token: owner.token)
        _ = try geo.create(PostDraft(kind: "sight", title: "Dom Tower", lat: 52.0907, lon: 5.1214, notifyRadius: 100), token: owner.token)
        try geo.catchUp()
        #expect(!geo.geo.startedFromSnapshot)
        let before = try Self.answers(geo)
        #expect(before.allSatisfy { $0.contains("\"hits\":[{") }, "every search finds something")
        #expect(geo.geo.fences.count == 1)

        try geo.restartGeo()
        #expect(geo.geo.startedFromSnapshot)
        #expect(try Self.answers(geo) == before)
        #expect(geo.geo.fences.count == 1)
        try GeoServiceTests.expectSame(geo, "after a start from the snapshot")
        // It follows on from there.
        _ = try geo.create(PostDraft(kind: "restaurant", title: "Burger Barn", lat: 52.1, lon: 5.1), token: owner.token)
        try geo.catchUp()
        #expect(try geo.client.call(GeoAPI.search, SearchRequest(lat: 52.1, lon: 5.1, radius: 1_000, q: "barn")).hits.count == 1)
        let withBarn = try Self.answers(geo)

        // A damaged file: read from the database instead.
        let path = IndexSnapshot.path(forDatabase: geo.geo.settings.databasePath)
        geo.geo.stop()
        let file = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try file.seek(toOffset: 4_096)
        try file.write(contentsOf: Data([0x55, 0xAA, 0x55, 0xAA]))
        try file.close()
        try geo.restartGeo()
        #expect(!geo.geo.startedFromSnapshot)
        #expect(try Self.answers(geo) == withBarn)

        // A database put back after the stop from a backup older than the snapshot:
        // it stands before the snapshot in the feed, so it is read whole.
        geo.geo.stop()
        #expect(FileManager.default.fileExists(atPath: path))
        let database = try DatabaseQueue(path: geo.geo.settings.databasePath)
        try database.write { db in try db.execute(sql: "UPDATE feed_cursor SET seq = seq - 1 WHERE feed = 'catalogue'") }
        try database.close()
        try geo.restartGeo()
        #expect(!geo.geo.startedFromSnapshot)
        #expect(!FileManager.default.fileExists(atPath: path), "a snapshot that cannot be used goes")
        #expect(try Self.answers(geo) == withBarn)
        try GeoServiceTests.expectSame(geo, "after a start from the database")
    }

    @Test("while geo runs, a snapshot is written once enough has changed since the last, and a crash then starts from it")
    func writtenWhileRunning() throws {
        let geo = try GeoFixture()
        let owner = try geo.user()
        let path = IndexSnapshot.path(forDatabase: geo.geo.settings.databasePath)
        let keeper = SnapshotKeeper(path: path, store: geo.geo.store, index: geo.geo.index, logger: TestStack.logger("geo"),
                                    changesWorthASnapshot: 3)
        for number in 0..<4 {
            _ = try geo.create(PostDraft(kind: "sight", title: "Sight \(number)", lat: 52.09, lon: 5.12), token: owner.token)
            try geo.catchUp()
            keeper.writeIfDue()
            #expect(FileManager.default.fileExists(atPath: path) == (number >= 2), "after \(number + 1) changes")
        }
        geo.geo.stopAsIfKilled()
        try geo.startGeo()
        #expect(geo.geo.startedFromSnapshot && geo.geo.changesAfterSnapshot == 1)
        try GeoServiceTests.expectSame(geo, "after a crash, from the snapshot written while running")
    }

    @Test("after a crash, a start reads the last snapshot and then only what changed after it: new, edited, deleted and re-rated posts")
    func crash() throws {
        let geo = try GeoFixture()
        let owner = try geo.user()
        try GeoServiceTests.importPosts(geo.catalogueClient, owner: owner.token, count: 1_200, prefix: "snapshot")
        _ = try geo.create(PostDraft(kind: "restaurant", title: "Burger Bar", text: "Smash burgers", lat: 52.0920, lon: 5.1200,
                                     tags: ["Vegan"], hours: "Mo-Su 11:00-22:00", timezone: "Europe/Amsterdam"), token: owner.token)
        try geo.catchUp()
        try geo.restartGeo()
        #expect(geo.geo.startedFromSnapshot)

        // Changes after the snapshot, then a crash: no snapshot written at the end.
        let listed = try geo.catalogueClient.call(CatalogueAPI.list, ListPostsRequest(limit: 30)).posts
        for post in listed.prefix(10) {
            _ = try geo.catalogueClient.call(CatalogueAPI.delete, IDRequest(id: post.id), token: owner.token)
        }
        for post in listed.suffix(10) {
            _ = try geo.catalogueClient.call(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["title": "Burger moved"]),
                                             token: owner.token)
        }
        let rater = try geo.user()
        _ = try geo.catalogueClient.call(CatalogueAPI.rate, SetRatingRequest(postId: listed[15].id, stars: 5), token: rater.token)
        _ = try geo.create(PostDraft(kind: "sight", title: "Dom Tower", lat: 52.0907, lon: 5.1214, notifyRadius: 100), token: owner.token)
        try geo.catchUp()
        let before = try Self.answers(geo)
        let rated = try geo.client.call(GeoAPI.search, SearchRequest(lat: listed[15].lat, lon: listed[15].lon, radius: 10))
        geo.geo.stopAsIfKilled()

        try geo.startGeo()
        #expect(geo.geo.startedFromSnapshot)
        #expect(geo.geo.changesAfterSnapshot == 22, "10 deleted, 10 edited, 1 rated, 1 new")
        #expect(try Self.answers(geo) == before)
        #expect(try geo.client.call(GeoAPI.search, SearchRequest(lat: listed[15].lat, lon: listed[15].lon, radius: 10)) == rated)
        for post in listed.suffix(10) {
            let hits = try geo.client.call(GeoAPI.search, SearchRequest(lat: post.lat, lon: post.lon, radius: 10, q: "moved")).hits
            #expect(hits.contains { $0.id == post.id }, "the edit of \(post.id)")
        }
        for post in listed.prefix(10) {
            let hits = try geo.client.call(GeoAPI.search, SearchRequest(lat: post.lat, lon: post.lon, radius: 10)).hits
            #expect(!hits.contains { $0.id == post.id }, "the deletion of \(post.id)")
        }
        #expect(geo.geo.fences.count == 1)
        try GeoServiceTests.expectSame(geo, "after a crash, from the snapshot and the changes after it")
        // Once a snapshot holds them, the deletions are forgotten.
        geo.geo.stop()
        let database = try DatabaseQueue(path: geo.geo.settings.databasePath)
        #expect(try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM post_gone") } == 0)
        try database.close()
    }
}

@Suite("Geo's index snapshot, in memory")
struct IndexSnapshotFileTests {
    private func index(posts: Int) -> PostIndex {
        let index = PostIndex()
        index.apply((0..<posts).map { number in
            .upsert(IndexedPost(id: "post-\(number)", ownerId: "owner-\(number % 7)",
                                draft: PostDraft(kind: ["offer", "sight"][number % 2], title: "Item \(number) café", text: "words \(number)",
                                                 lat: Double(number % 80), lon: Double(number % 170), tags: number % 3 == 0 ? ["Vegan"] : []),
                                createdAt: Date(timeIntervalSince1970: Double(number))))
        })
        return index
    }

    private func path() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("snapshot-\(UUID().uuidString).index").path
    }

    @Test("a snapshot read back answers as the index it was written from")
    func roundTrip() throws {
        let original = index(posts: 2_000)
        let file = path()
        defer { unlink(file) }
        try original.writeSnapshot(to: file, id: "state-1")
        let copy = try PostIndex.readSnapshot(from: file, id: "state-1")
        #expect(copy.count == original.count)
        for (lat, lon, q) in [(10.0, 10.0, "item"), (40, 100, "cafe"), (0, 0, nil), (79, 169, "vegan")] as [(Double, Double, String?)] {
            let query = PostQuery(q: q)
            let expected = original.search(lat: lat, lon: lon, radius: 500_000, query: query, sort: .distance, limit: 50, after: nil)
            let found = copy.search(lat: lat, lon: lon, radius: 500_000, query: query, sort: .distance, limit: 50, after: nil)
            #expect(found.hits == expected.hits && found.nextCursor == expected.nextCursor)
            #expect(found.hits.count > 2, "the search finds something")
        }
        #expect(throws: IndexSnapshot.Unreadable.self) { try PostIndex.readSnapshot(from: file, id: "state-2") }
    }

    @Test("a snapshot whose records point outside their arenas is refused, not searched")
    func refusesDanglingRecords() throws {
        let broken = index(posts: 100)
        broken.records[7].strings.length += 4_096
        let file = path()
        defer { unlink(file) }
        try broken.writeSnapshot(to: file, id: "state-1")
        #expect(throws: IndexSnapshot.Unreadable.self) { try PostIndex.readSnapshot(from: file, id: "state-1") }
    }
}
