import EdgeFixtures
import Foundation
import HereaboutsKit
import TestThreads
import Testing

/// Live queries through HereaboutsKit, the edge's socket and geo's watches, against
/// `here up`'s processes.
@Suite("HereaboutsKit: live queries", .ownThread)
struct LiveQueryTests {
    // Each step waits up to a minute and fails saying what came instead (CI runs this
    // beside every other suite); the limit bounds the whole. Its clock starts before
    // `.ownThread` gives the test a slot (with HEREABOUTS_TEST_WIDTH=1 the suite's last
    // test reports the three's time): in whole `swift test` runs these two took
    // 254-263 s, against 10-13 s alone, too close to the 5 minutes they had.
    @Test("a phone's map: a bike posted near it appears, moves away and is gone; after geo restarts, fresh results",
          .timeLimit(.minutes(12)))
    func map() async throws {
        // The edge renews its watches every 2 s here (240 s by default): it finds the
        // restarted geo without them that soon.
        let stack = try EdgeStack("kit-live", environment: ["HEREABOUTS_EDGE_WATCH_RENEW": "2"]), port = stack.port, logs = stack.logs
        defer { stack.stop() }
        let geo = try #require(servicePID("geo", in: stack.up.logText))
        let seller = kit(port)
        try await seller.register(email: "bikes@example.org", password: "password1")
        let old = try await seller.createPost(PostDraft(kind: "offer", title: "Old bike", latitude: 52.0907, longitude: 5.1214))
        let phone = kit(port)
        try await phone.signInAnonymously()
        _ = try await eventually("the old bike indexed") {
            try await phone.nearest(latitude: 52.0907, longitude: 5.1214, count: 1, query: "bike").first
        }

        let map = UpdateRecorder(phone.watch(near: .coordinate(latitude: 52.0907, longitude: 5.1214), radius: 2_000, query: "bike"), logs: logs)
        guard case .results(let first, _, let reset) = try await map.next("the first results") else { throw Timeout(description: "no results") }
        #expect(first.map(\.id) == [old.id] && !reset)

        let bike = try await seller.createPost(PostDraft(kind: "offer", title: "City bike", latitude: 52.0920, longitude: 5.1200))
        _ = try await seller.createPost(PostDraft(kind: "offer", title: "Desk lamp", latitude: 52.0920, longitude: 5.1200))
        guard case .entered(let hit) = try await map.next("the new bike") else { throw Timeout(description: "no entered") }
        #expect(hit.id == bike.id && hit.title == "City bike" && (hit.distance ?? 0) > 100)
        var moved = PostChange()
        moved.lat = 52.3
        try await seller.updatePost(bike.id, moved)
        #expect(try await map.next("the bike moving away") == .left(postId: bike.id))
        try await seller.deletePost(old.id)
        #expect(try await map.next("the old bike deleted") == .left(postId: old.id))

        let red = try await seller.createPost(PostDraft(kind: "offer", title: "Red bike", latitude: 52.0915, longitude: 5.1210))
        guard case .entered(let redHit) = try await map.next("the red bike") else { throw Timeout(description: "no entered") }
        #expect(redHit.id == red.id)

        // Geo forgets its watches when it restarts (`here` starts it again): the
        // edge opens the watch anew and the map gets fresh results, the same page a
        // search asked now gives.
        kill(geo, SIGKILL)
        guard case .results(let fresh, _, let isReset) = try await map.next("fresh results after geo restarted") else {
            throw Timeout(description: "no reset")
        }
        let searched = try await phone.search(near: .coordinate(latitude: 52.0907, longitude: 5.1214), radius: 2_000, query: "bike")
            .page().items
        #expect(isReset && fresh.map(\.id) == [red.id])
        #expect(fresh.map(\.id) == searched.map(\.id) && fresh.map(\.title) == searched.map(\.title)
                && fresh.map(\.distance) == searched.map(\.distance), "the reset page and a fresh search differ")
        let again = try await seller.createPost(PostDraft(kind: "offer", title: "Bike again", latitude: 52.0907, longitude: 5.1214))
        // Its event may come before the edge's subscription to the new geo is back;
        // then the edge's next renewal finds it missing and sends fresh results.
        switch try await map.next("the bike posted after the restart") {
        case .entered(let back): #expect(back.id == again.id)
        case .results(let hits, _, let reset): #expect(Set(hits.map(\.id)) == [again.id, red.id] && reset)
        case let other: Issue.record("unexpected \(other)")
        }
    }

    @Test("divers near Middelburg: divers who move in appear, one who moves further is in another band, one who hides goes",
          .timeLimit(.minutes(12)))
    func divers() async throws {
        let stack = try EdgeStack("kit-live-divers"), port = stack.port, logs = stack.logs
        defer { stack.stop() }
        let ann = kit(port), bea = kit(port), seeker = kit(port)
        let annUser = try await ann.register(email: "ann@example.org", password: "password1")
        let beaUser = try await bea.register(email: "bea@example.org", password: "password1")
        try await seeker.register(email: "seeker@example.org", password: "password1")
        let diver = Attributes(additionalProperties: ["certification": "AOWD"])
        try await ann.updateProfile(attributes: diver)
        try await bea.updateProfile(attributes: diver)

        // Middelburg in Zeeland by its coordinates: by name it is the larger one in South Africa.
        let middelburg = SearchOrigin.coordinate(latitude: 51.4988, longitude: 3.6136)
        let divers = UpdateRecorder(seeker.watchUsers(near: middelburg, radius: 30_000,
                                                      attributes: ["certification": "AOWD"]), logs: logs)
        #expect(try await divers.next("the divers near now") == .results([], reset: false))
        try await ann.setLocation(latitude: 51.50, longitude: 3.61)  // in Middelburg
        guard case .entered(let annNear) = try await divers.next("Ann's home") else { throw Timeout(description: "no entered") }
        #expect(annNear.userId == annUser.id && annNear.distance <= 2_000)
        try await bea.setLocation(latitude: 51.45, longitude: 3.58)  // Vlissingen, about 6 km
        guard case .entered(let arrived) = try await divers.next("Bea moving in") else { throw Timeout(description: "no entered") }
        #expect(arrived.userId == beaUser.id && arrived.distance > 5_000 && arrived.distance <= 7_500)
        try await bea.setLocation(latitude: 51.54, longitude: 3.44)  // Domburg, about 13 km
        guard case .changed(let further) = try await divers.next("Bea moving further") else { throw Timeout(description: "no changed") }
        #expect(further.userId == beaUser.id && further.distance > 10_000 && further.distance <= 15_000)
        try await ann.setLocation(latitude: 51.50, longitude: 3.61, discoverable: false)
        #expect(try await divers.next("Ann hiding") == .left(userId: annUser.id))

        // What the updates built is what a fresh search finds.
        let now = try await seeker.usersNear(middelburg, radius: 30_000, attributes: ["certification": "AOWD"])
        #expect(now == [further])
    }

    @Test("a refused live query ends with the server's error and the field at fault")
    func refused() async throws {
        let stack = try EdgeStack("kit-live-refused"), port = stack.port
        defer { stack.stop() }
        let phone = kit(port)
        try await phone.signInAnonymously()
        var updates = phone.watch(near: .place("Utrecht"), radius: 900_000).makeAsyncIterator()
        let error = await #expect(throws: HereaboutsError.self) { _ = try await updates.next() }
        #expect(error?.code == "invalid_argument" && error?.field == "search.radius")
    }
}
