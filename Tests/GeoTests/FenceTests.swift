import Contracts
import Foundation
@testable import Geo
import TestThreads
import Testing
import Wire
import ZeroMQ

/// A point `metres` north of (lat, lon) along its meridian.
private func north(_ lat: Double, _ lon: Double, _ metres: Double) -> (lat: Double, lon: Double) {
    (lat + metres / GeoRules.earthRadius * 180 / .pi, lon)
}

@Suite("Geofences", .ownThread)
struct FenceTests {
    @Test("the rule: enter at ≤ r, stay in the band up to 1.1 r, leave beyond it; a fence that is gone is left")
    func rule() {
        let sight = FenceIndex.Fence(postId: "s", lat: 0, lon: 0, radius: 100)
        let other = FenceIndex.Fence(postId: "t", lat: 0, lon: 0, radius: 1_000)
        func crossing(_ before: Set<String>, _ near: [(FenceIndex.Fence, Double)]) -> FenceCrossing {
            FenceCrossing(wasInside: before, near: near.map { (fence: $0.0, distance: $0.1) })
        }
        // `near` holds what FenceIndex finds: fences within 1.1 r.
        let cases: [(String, Set<String>, [(FenceIndex.Fence, Double)], FenceCrossing)] = [
            ("outside, far", [], [], FenceCrossing(entered: [], exited: [], inside: [])),
            ("on the edge enters", [], [(sight, 100)], FenceCrossing(entered: ["s"], exited: [], inside: ["s"])),
            ("in the band, from outside: not yet", [], [(sight, 105)], FenceCrossing(entered: [], exited: [], inside: [])),
            ("in the band, from inside: stays", ["s"], [(sight, 109)], FenceCrossing(entered: [], exited: [], inside: ["s"])),
            ("inside, still inside", ["s"], [(sight, 10)], FenceCrossing(entered: [], exited: [], inside: ["s"])),
            ("beyond 1.1 r leaves", ["s"], [], FenceCrossing(entered: [], exited: ["s"], inside: [])),
            ("a fence gone is left", ["gone", "s"], [(sight, 50)], FenceCrossing(entered: [], exited: ["gone"], inside: ["s"])),
            ("two at once, nearest first", [], [(other, 400), (sight, 20)], FenceCrossing(entered: ["s", "t"], exited: [], inside: ["s", "t"])),
        ]
        for (name, before, near, expected) in cases {
            #expect(crossing(before, near) == expected, "\(name)")
        }
    }

    @Test("through the socket: enter, hysteresis, exit, events on geo.fence/<userId>/, restart, and a deleted sight lets everyone out")
    func updates() throws {
        let geo = try GeoFixture()
        let guide = try geo.user(), walker = try geo.user()
        let sight = try geo.create(PostDraft(kind: "sight", title: "Dom Tower", lat: 52.0907, lon: 5.1214, notifyRadius: 100),
                                   token: guide.token)
        _ = try geo.create(PostDraft(kind: "sight", title: "Elsewhere", lat: 52.2, lon: 5.3, notifyRadius: 100), token: guide.token)
        try geo.catchUp()

        let subscriber = try ZeroMQ.Context.shared.makeSocket(.subscribe)
        defer { subscriber.close() }
        try subscriber.set(.subscribe(Data(GeoAPI.fenceTopic(userId: walker.id).utf8)))
        try subscriber.set(.receiveTimeout(milliseconds: 5000))
        try subscriber.connect(try #require(geo.stack.eventsEndpoint("geo")))
        Thread.sleep(forTimeInterval: 0.2)

        func at(_ metres: Double, token: String? = nil) throws -> FenceUpdateReply {
            let point = north(52.0907, 5.1214, metres)
            return try geo.client.call(GeoAPI.fencesUpdate, FenceUpdateRequest(lat: point.lat, lon: point.lon), token: token ?? walker.token)
        }
        func event() throws -> FenceEvent {
            let frames = try #require(try subscriber.receiveMessage())
            #expect(frames.first == Data(GeoAPI.fenceTopic(userId: walker.id).utf8))
            return try JSONValueDecoder().decode(FenceEvent.self, from: frames[1])
        }
        let none = FenceUpdateReply(entered: [], exited: [], inside: [])
        let inside = FenceUpdateReply(entered: [], exited: [], inside: [sight.id])

        #expect(try at(300) == none)
        #expect(try at(105) == none)  // the band does not let anyone in
        #expect(try at(90) == FenceUpdateReply(entered: [sight.id], exited: [], inside: [sight.id]))
        let entered = try event()
        #expect(entered.type == .entered && entered.postId == sight.id)
        #expect(abs(entered.at.timeIntervalSinceNow) < 60)
        #expect(try at(105) == inside)  // nor out
        #expect(try at(90) == inside)
        #expect(try at(115) == FenceUpdateReply(entered: [], exited: [sight.id], inside: []))
        let exited = try event()
        #expect(exited.type == .exited && exited.postId == sight.id && exited.at >= entered.at)
        #expect(try at(50) == FenceUpdateReply(entered: [sight.id], exited: [], inside: [sight.id]))
        #expect(try event().type == .entered)

        // A retry of the same request is answered as before and sends nothing again.
        let point = north(52.0907, 5.1214, 200)
        let first = try geo.client.call(GeoAPI.fencesUpdate, FenceUpdateRequest(lat: point.lat, lon: point.lon), token: walker.token,
                                        id: "retry-1")
        let retried = try geo.client.call(GeoAPI.fencesUpdate, FenceUpdateRequest(lat: point.lat, lon: point.lon), token: walker.token,
                                          id: "retry-1")
        #expect(first == FenceUpdateReply(entered: [], exited: [sight.id], inside: []) && retried == first)
        #expect(try event().type == .exited)
        #expect(try at(40) == FenceUpdateReply(entered: [sight.id], exited: [], inside: [sight.id]))
        #expect(try event().type == .entered)

        // State is in geo's file: a restart keeps it.
        try geo.restartGeo()
        try subscriber.connect(try #require(geo.stack.eventsEndpoint("geo")))
        #expect(try at(60) == inside)

        // Another user has their own state; an anonymous session may use fences too.
        let anonymous = try geo.authClient.call(AuthAPI.anonymous, Empty())
        #expect(try at(60, token: anonymous.accessToken).entered == [sight.id])
        #expect(geo.failure(GeoAPI.fencesUpdate, FenceUpdateRequest(lat: 0, lon: 0))?.code == .unauthenticated)

        // The sight goes: those inside get an exit, on the reply and on the topic.
        Thread.sleep(forTimeInterval: 0.2)  // the subscriber reconnects to the restarted service
        _ = try geo.catalogueClient.call(CatalogueAPI.delete, IDRequest(id: sight.id), token: guide.token)
        try geo.catchUp()
        let exit = try event()
        #expect(exit.type == .exited && exit.postId == sight.id)
        #expect(try at(60) == none)
        #expect(try at(60, token: anonymous.accessToken) == none)
    }

    @Test("a post that stops being a fence lets its users out; one that becomes a fence can be entered")
    func radiusChanges() throws {
        let geo = try GeoFixture()
        let guide = try geo.user(), walker = try geo.user()
        let post = try geo.create(PostDraft(kind: "sight", title: "Fountain", lat: 10, lon: 10, notifyRadius: 50), token: guide.token)
        try geo.catchUp()
        let update = FenceUpdateRequest(lat: 10, lon: 10)
        #expect(try geo.client.call(GeoAPI.fencesUpdate, update, token: walker.token).entered == [post.id])
        _ = try geo.catalogueClient.call(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["notifyRadius": nil]), token: guide.token)
        try geo.catchUp()
        #expect(try geo.client.call(GeoAPI.fencesUpdate, update, token: walker.token) == FenceUpdateReply(entered: [], exited: [], inside: []))
        #expect(try geo.client.call(GeoAPI.fencesPlan, FencePlanRequest(lat: 10, lon: 10)).regions.isEmpty)
        _ = try geo.catalogueClient.call(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["notifyRadius": 2_000]), token: guide.token)
        try geo.catchUp()
        #expect(try geo.client.call(GeoAPI.fencesUpdate, update, token: walker.token).entered == [post.id])
        #expect(try geo.client.call(GeoAPI.fencesPlan, FencePlanRequest(lat: 10, lon: 10)).regions
                == [FenceRegion(postId: post.id, lat: 10, lon: 10, radius: 2_000)])
        // A deleted user's state goes with them.
        _ = try geo.authClient.call(AuthAPI.delete, DeleteRequest(password: "correct horse battery"), token: walker.token)
        try geo.catchUpWithAuth()
        let rows = try geo.geo.store.database.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM fence_inside") }
        #expect(rows == 0)
    }

    @Test("plan gives the nearest fences, at most max (≤ 20), exactly as brute force; posts without a radius are no fences")
    func plan() throws {
        let geo = try GeoFixture()
        let guide = try geo.user()
        var drafts: [PostDraft] = []
        var generator = SystemRandomNumberGenerator()
        for index in 0..<40 {
            // Around the 180° meridian, so the nearest cross it.
            let lon = Double.random(in: 179.5...180, using: &generator) * (index % 2 == 0 ? 1 : -1)
            drafts.append(PostDraft(kind: "sight", title: "S\(index)", lat: Double.random(in: -1...1, using: &generator), lon: lon,
                                    notifyRadius: index % 10 == 9 ? nil : Double(10 + index * 10)))
        }
        let posts = try drafts.map { try geo.create($0, token: guide.token) }
        try geo.catchUp()
        let fences = posts.filter { $0.notifyRadius != nil }
        for (lat, lon, max) in [(0.0, 180.0, 20), (0.5, -179.9, 5), (-1, 179.6, 1)] {
            let plan = try geo.client.call(GeoAPI.fencesPlan, FencePlanRequest(lat: lat, lon: lon, max: max)).regions
            let expected = fences.sorted { a, b in
                let da = Sphere.distance(lat1: lat, lon1: lon, lat2: a.lat, lon2: a.lon)
                let db = Sphere.distance(lat1: lat, lon1: lon, lat2: b.lat, lon2: b.lon)
                return da != db ? da < db : a.id < b.id
            }.prefix(max).map { FenceRegion(postId: $0.id, lat: $0.lat, lon: $0.lon, radius: $0.notifyRadius!) }
            #expect(plan == Array(expected), "\(lat),\(lon) max \(max)")
        }
        #expect(try geo.client.call(GeoAPI.fencesPlan, FencePlanRequest(lat: 0, lon: 180)).regions.count == 20)
    }
}
