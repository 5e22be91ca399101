import Contracts
import Foundation
import Synchronization
@testable import Geo
import ServiceClient
import ServiceKit
import TestThreads
import Testing
import Wire

@Suite("Geo through its socket, following catalogue", .ownThread)
struct GeoServiceTests {
    static let utrecht = (lat: 52.0907, lon: 5.1214)
    static func at(_ text: String) -> Date { Timestamp.parse(text)! }

    @Test("hits answer the whole opening_hours syntax: holidays of the post's country and state, when the status next changes, the rule's comment")
    func openingHoursAnswers() throws {
        let geo = try GeoFixture()
        let owner = try geo.user()
        // Munich (Bavaria: Epiphany, 6 January, is a public holiday) and Berlin (it is not).
        let munich = try geo.create(PostDraft(kind: "restaurant", title: "Wirtshaus Munich", lat: 48.1372, lon: 11.5756,
                                              hours: "Mo-Sa 11:00-22:00; PH off", timezone: "Europe/Berlin"), token: owner.token)
        let berlin = try geo.create(PostDraft(kind: "restaurant", title: "Wirtshaus Berlin", lat: 52.5200, lon: 13.4050,
                                              hours: "Mo-Sa 11:00-22:00; PH off", timezone: "Europe/Berlin"), token: owner.token)
        let atelier = try geo.create(PostDraft(kind: "shop", title: "Atelier", lat: 52.5210, lon: 13.4060,
                                               hours: "Mo-Fr 10:00-18:00; Sa \"by appointment\"; Su 18:00+", timezone: "Europe/Berlin"),
                                     token: owner.token)
        try geo.catchUp()
        func hit(_ post: Post, at: String) throws -> Hit {
            let reply = try geo.client.call(GeoAPI.search, SearchRequest(lat: post.lat, lon: post.lon, radius: 100, q: post.title,
                                                                          at: Self.at(at)))
            return try #require(reply.hits.first { $0.id == post.id })
        }
        // Tuesday 2026-01-06, 12:00 in Germany: Epiphany closes Munich, not Berlin.
        let epiphanyMunich = try hit(munich, at: "2026-01-06T11:00:00Z")
        #expect(epiphanyMunich.openStatus == "closed")
        #expect(epiphanyMunich.nextChange == "2026-01-07T10:00:00Z", "opens at 11:00 the next day")
        let epiphanyBerlin = try hit(berlin, at: "2026-01-06T11:00:00Z")
        #expect(epiphanyBerlin.openStatus == "open" && epiphanyBerlin.nextChange == "2026-01-06T21:00:00Z")
        // Christmas Day, a holiday everywhere in Germany.
        #expect(try hit(berlin, at: "2026-12-25T11:00:00Z").openStatus == "closed")
        #expect(try geo.client.call(GeoAPI.search, SearchRequest(lat: 52.52, lon: 13.405, radius: 50, openNow: true,
                                                                   at: Self.at("2026-12-25T11:00:00Z"))).hits.isEmpty)
        // A Saturday: unknown, with the rule's comment; never counted as open.
        let saturday = try hit(atelier, at: "2026-11-28T11:00:00Z")
        #expect(saturday.openStatus == "unknown" && saturday.hoursComment == "by appointment")
        #expect(saturday.nextChange == "2026-11-28T23:00:00Z", "Sunday: closed until the open end")
        // Sunday evening: an open end.
        let sunday = try hit(atelier, at: "2026-11-29T18:00:00Z")
        #expect(sunday.openStatus == "open_end" && sunday.hoursComment == nil)
        #expect(try geo.client.call(GeoAPI.search, SearchRequest(lat: 52.521, lon: 13.406, radius: 100, openNow: true,
                                                                   at: Self.at("2026-11-29T18:00:00Z"))).hits.isEmpty)
    }

    @Test("posts created, changed, rated and deleted in catalogue are found, changed and gone in geo")
    func followsCatalogue() throws {
        let geo = try GeoFixture()
        let owner = try geo.user(), rater = try geo.user()
        let bar = try geo.create(PostDraft(kind: "restaurant", title: "Burger Bar", text: "Smash burgers", lat: 52.0920, lon: 5.1200,
                                           category: "food", tags: ["Vegan", "late"], hours: "Mo-Su 11:00-22:00",
                                           timezone: "Europe/Amsterdam", ref: "bar-1"), token: owner.token)
        let tower = try geo.create(PostDraft(kind: "sight", title: "Dom Tower", lat: 52.0908, lon: 5.1213), token: owner.token)
        let palace = try geo.create(PostDraft(kind: "restaurant", title: "Burger Palace", lat: 52.3700, lon: 4.8900), token: owner.token)
        try geo.catchUp()

        func search(_ q: String?, radius: Double = 5_000, sort: SearchSort? = nil, openNow: Bool? = nil, at: String = "2026-11-23T12:00:00Z",
                    kinds: [String]? = nil, tags: [String]? = nil) throws -> SearchReply {
            try geo.client.call(GeoAPI.search, SearchRequest(lat: Self.utrecht.lat, lon: Self.utrecht.lon, radius: radius, q: q, kinds: kinds,
                                                             tags: tags, openNow: openNow, at: Self.at(at), sort: sort))
        }

        let near = try search("burger")
        #expect(near.hits.map(\.id) == [bar.id])
        let hit = try #require(near.hits.first)
        #expect(hit.title == "Burger Bar" && hit.kind == "restaurant" && hit.ownerId == owner.id && hit.ref == "bar-1")
        #expect(hit.tags == ["Vegan", "late"] && hit.lat == 52.0920 && hit.lon == 5.1200)
        #expect(abs(hit.distance! - Sphere.distance(lat1: Self.utrecht.lat, lon1: Self.utrecht.lon, lat2: 52.0920, lon2: 5.1200)) < 0.01)
        #expect(hit.openStatus == "open")
        #expect(near.center == SearchReply.Center(lat: Self.utrecht.lat, lon: Self.utrecht.lon))
        // 22:45 in Amsterdam: closed; 21:40: closes soon; 03:00 with openNow: nothing.
        #expect(try search("burger", at: "2026-11-23T21:45:00Z").hits.first?.openStatus == "closed")
        #expect(try search("burger", at: "2026-11-23T20:40:00Z").hits.first?.openStatus == "closes_soon")
        // 10:45 in Amsterdam, a quarter of an hour before 11:00: opens soon.
        #expect(try search("burger", at: "2026-11-24T09:45:00Z").hits.first?.openStatus == "opens_soon")
        #expect(try search(nil, openNow: true, at: "2026-11-23T03:00:00Z").hits.isEmpty)
        #expect(try search(nil, openNow: true).hits.map(\.id) == [bar.id])
        #expect(try search("Dom", at: "2026-11-23T03:00:00Z").hits.first?.openStatus == nil)

        // Words from text, tags and category; the last word as a prefix; accents and case folded.
        #expect(try search("SMASH").hits.map(\.id) == [bar.id])
        #expect(try search("vegan food").hits.map(\.id) == [bar.id])
        #expect(try search("búrg").hits.map(\.id) == [bar.id])
        #expect(try search("burg bar").hits.isEmpty, "only the last word is a prefix")
        #expect(try search("burg", radius: 50_000).hits.map(\.id) == [bar.id, palace.id])
        #expect(try search(nil, radius: 50_000, sort: .title).hits.map(\.id) == [bar.id, palace.id, tower.id])
        #expect(try search(nil, radius: 50_000, sort: .titleDescending).hits.map(\.id) == [tower.id, palace.id, bar.id])
        #expect(try search(nil, radius: 50_000, sort: .newest).hits.map(\.id) == [palace.id, tower.id, bar.id])
        #expect(try search(nil, radius: 50_000, kinds: ["sight"]).hits.map(\.id) == [tower.id])
        #expect(try search(nil, radius: 50_000, tags: ["VEGAN"]).hits.map(\.id) == [bar.id])
        #expect(try search(nil, radius: 50_000, tags: ["vegan", "halal"]).hits.isEmpty)

        _ = try geo.catalogueClient.call(CatalogueAPI.update, UpdatePostRequest(id: tower.id, changes: ["title": "Domtoren"]), token: owner.token)
        _ = try geo.catalogueClient.call(CatalogueAPI.rate, SetRatingRequest(postId: bar.id, stars: 4), token: rater.token)
        _ = try geo.catalogueClient.call(CatalogueAPI.delete, IDRequest(id: palace.id), token: owner.token)
        try geo.catchUp()
        #expect(try search("domtoren").hits.map(\.id) == [tower.id])
        #expect(try search("tower").hits.isEmpty)
        #expect(try search("burger").hits.first?.rating == Rating(average: 4, count: 1))
        #expect(try search("burger", radius: 50_000).hits.map(\.id) == [bar.id])
        #expect(try search(nil, radius: 50_000, sort: .rating).hits.map(\.id) == [bar.id, tower.id])

        let nearest = try geo.client.call(GeoAPI.nearest, NearestRequest(lat: Self.utrecht.lat, lon: Self.utrecht.lon, k: 5))
        #expect(nearest.hits.map(\.id) == [tower.id, bar.id])
        #expect(try geo.client.call(GeoAPI.nearest, NearestRequest(lat: 0, lon: 0, k: 5, maxDistance: 1_000)).hits.isEmpty)
        let box = try geo.client.call(GeoAPI.within, WithinRequest(minLat: 52, minLon: 5, maxLat: 52.2, maxLon: 5.2, kinds: ["sight"]))
        #expect(box.hits.map(\.id) == [tower.id] && box.hits.first?.distance == nil)

        let stats = try geo.client.call(GeoAPI.stats, Empty())
        #expect(stats.posts == 2 && stats.lag["catalogue"] == 0 && stats.memoryBytes > 0)
    }

    /// Imports `count` posts spread over the world for `owner`, refs `prefix-i`.
    static func importPosts(_ client: ServiceClient, owner: String, count: Int, prefix: String) throws {
        var drafts: [PostDraft] = []
        for i in 0..<count {
            let lat = Double((i * 37) % 170) - 85 + Double(i % 7) * 0.01
            let lon = Double((i * 53) % 360) - 180 + Double(i % 5) * 0.01
            drafts.append(PostDraft(kind: ["offer", "sight", "tip"][i % 3], title: "\(prefix) item \(i)", lat: lat, lon: lon,
                                    ref: "\(prefix)-\(i)"))
            if drafts.count == 500 || i == count - 1 {
                _ = try client.call(CatalogueAPI.importPosts, ImportPostsRequest(posts: drafts), token: owner)
                drafts.removeAll()
            }
        }
    }

    static func expectSame(_ geo: GeoFixture, _ comment: Comment) throws {
        let posts = try geo.cataloguePosts()
        let hits = try geo.geoPosts()
        #expect(hits.count == posts.count, comment)
        #expect(try geo.client.call(GeoAPI.stats, Empty()).posts == posts.count, comment)
        for (id, post) in posts {
            guard let hit = hits[id] else {
                Issue.record("\(comment): \(id) missing in geo")
                return
            }
            #expect(hit.title == post.title && hit.lat == post.lat && hit.lon == post.lon, comment)
        }
    }

    @Test("a restart, a restart in the middle of following, and a start on an empty file all end with catalogue's posts")
    func restarts() throws {
        let geo = try GeoFixture()
        let owner = try geo.user()
        try Self.importPosts(geo.catalogueClient, owner: owner.token, count: 1_200, prefix: "first")
        let some = try geo.catalogueClient.call(CatalogueAPI.list, ListPostsRequest(limit: 30)).posts
        for post in some.prefix(15) {
            _ = try geo.catalogueClient.call(CatalogueAPI.delete, IDRequest(id: post.id), token: owner.token)
        }
        for post in some.suffix(15) {
            _ = try geo.catalogueClient.call(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["title": "moved", "lat": .number(.double(-post.lat))]),
                                             token: owner.token)
        }
        try geo.catchUp()
        try Self.expectSame(geo, "after following")

        try geo.restartGeo()
        try Self.expectSame(geo, "after a restart")

        // Restarts while catalogue keeps changing: each batch is applied with its
        // cursor in one transaction, so nothing is lost or applied twice.
        let endpoint = geo.stack.endpoint("catalogue"), token = owner.token
        let done = DispatchSemaphore(value: 0)
        let importFailure = Mutex<(any Error)?>(nil)
        Thread {
            let client = ServiceClient(service: "catalogue", endpoint: endpoint, timeout: 20, tries: 1)
            do {
                try Self.importPosts(client, owner: token, count: 3_000, prefix: "second")
            } catch {
                importFailure.withLock { $0 = error }
            }
            client.close()
            done.signal()
        }.start()
        // Each restart comes once geo has applied more of the import since the last:
        // mid-way through following, not before it or after.
        for _ in 0..<3 {
            let before = try geo.geo.postFollower.cursor()
            let deadline = Date().addingTimeInterval(30)
            while try geo.geo.postFollower.cursor() == before, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
            try geo.restartGeo()
        }
        done.wait()
        #expect(importFailure.withLock { $0 } == nil, "the import failed: \(String(describing: importFailure.withLock { $0 }))")
        try geo.catchUp()
        try Self.expectSame(geo, "after restarts during following")

        try geo.restartGeo(removingFile: true)
        try geo.catchUp()
        try Self.expectSame(geo, "after a rebuild from seq 0")
    }
}
