import Contracts
import Foundation
@testable import Geo
import ServiceKitTesting
import TestThreads
import Testing
import Wire
import ZeroMQ

/// Watches through geo's sockets: opened, fed by catalogue's changes, renewed,
/// closed and expired, with their events on geo's PUB socket.
@Suite("Watches through the socket", .ownThread)
struct WatchSocketTests {
    /// A subscriber to one user's watch topic.
    final class Events {
        let socket: ZeroMQ.Socket
        let topic: String

        init(_ geo: GeoFixture, userId: String) throws {
            topic = GeoAPI.watchTopic(userId: userId)
            socket = try ZeroMQ.Context.shared.makeSocket(.subscribe)
            try socket.set(.subscribe(Data(topic.utf8)))
            try socket.set(.receiveTimeout(milliseconds: 5000))
            try socket.connect(try #require(geo.stack.eventsEndpoint("geo")))
            Thread.sleep(forTimeInterval: 0.2)
        }

        func next() throws -> WatchEvent {
            let frames = try #require(try socket.receiveMessage(), "no watch event within 5 s")
            #expect(frames.first == Data(topic.utf8))
            return try JSONValueDecoder().decode(WatchEvent.self, from: frames[1])
        }

        /// True when nothing arrives within `seconds`.
        func isQuiet(for seconds: Int32 = 1) throws -> Bool {
            try socket.set(.receiveTimeout(milliseconds: seconds * 1000))
            defer { try? socket.set(.receiveTimeout(milliseconds: 5000)) }
            return try socket.receiveMessage() == nil
        }

        deinit { socket.close() }
    }

    @Test("a bike watch near the Dom: first page, then entered, changed, left as posts come, change and go")
    func lifecycle() throws {
        let geo = try GeoFixture()
        let watcher = try geo.user(), seller = try geo.user()
        let old = try geo.create(PostDraft(kind: "offer", title: "Old bike", lat: 52.0907, lon: 5.1214), token: seller.token)
        try geo.catchUp()
        let events = try Events(geo, userId: watcher.id)

        let request = WatchOpenRequest(search: SearchRequest(lat: 52.0907, lon: 5.1214, radius: 2_000, q: "bike"))
        let opened = try geo.client.call(GeoAPI.watchOpen, request, token: watcher.token, id: "open-1")
        #expect(opened.hits?.map(\.id) == [old.id] && opened.center?.lat == 52.0907)
        #expect(opened.watch.topic == events.topic && opened.watch.expiresAt.timeIntervalSinceNow > 590)
        // A retried open is the same watch.
        #expect(try geo.client.call(GeoAPI.watchOpen, request, token: watcher.token, id: "open-1").watch.id == opened.watch.id)
        let id = opened.watch.id

        let bike = try geo.create(PostDraft(kind: "offer", title: "City bike", lat: 52.0920, lon: 5.1200), token: seller.token)
        _ = try geo.create(PostDraft(kind: "offer", title: "Desk lamp", lat: 52.0920, lon: 5.1200), token: seller.token)
        _ = try geo.create(PostDraft(kind: "offer", title: "Bike far away", lat: 52.3, lon: 4.9), token: seller.token)
        let entered = try events.next()
        #expect(entered.type == .entered && entered.watchId == id && entered.seq == 1 && entered.hit?.id == bike.id)
        #expect(entered.hit?.distance.map { $0 > 100 && $0 < 300 } == true)

        _ = try geo.catalogueClient.call(CatalogueAPI.update, UpdatePostRequest(id: bike.id, changes: ["title": "City bike, blue"]),
                                         token: seller.token)
        let changed = try events.next()
        #expect(changed.type == .changed && changed.seq == 2 && changed.hit?.title == "City bike, blue")
        _ = try geo.catalogueClient.call(CatalogueAPI.update, UpdatePostRequest(id: bike.id, changes: ["text": "barely used"]),
                                         token: seller.token)  // the hit shows no text: nothing to tell
        _ = try geo.catalogueClient.call(CatalogueAPI.update, UpdatePostRequest(id: bike.id, changes: ["lat": 52.2]), token: seller.token)
        let left = try events.next()
        #expect(left.type == .left && left.seq == 3 && left.postId == bike.id && left.hit == nil)
        _ = try geo.catalogueClient.call(CatalogueAPI.delete, IDRequest(id: old.id), token: seller.token)
        #expect(try events.next().postId == old.id)

        // The lease: renewed, then closed; another user's token cannot touch it.
        let renewed = try geo.client.call(GeoAPI.watchRenew, WatchRequest(id: id, lease: 60), token: watcher.token)
        #expect(renewed.watch.expiresAt.timeIntervalSinceNow < 61)
        #expect(opened.watch.seq == 0 && renewed.watch.seq == 4)  // what a subscriber that lost the last one would miss
        #expect(geo.failure(GeoAPI.watchRenew, WatchRequest(id: id), token: seller.token)?.code == .notFound)
        #expect(geo.failure(GeoAPI.watchClose, WatchRequest(id: id), token: seller.token)?.code == .notFound)
        _ = try geo.client.call(GeoAPI.watchClose, WatchRequest(id: id), token: watcher.token)
        #expect(geo.failure(GeoAPI.watchRenew, WatchRequest(id: id), token: watcher.token)?.code == .notFound)
        _ = try geo.create(PostDraft(kind: "offer", title: "Another bike", lat: 52.0907, lon: 5.1214), token: seller.token)
        #expect(try events.isQuiet())
    }

    @Test("a box watch across 180°, a lease that runs out, and a restart that forgets watches")
    func boxLeaseRestart() throws {
        let geo = try GeoFixture()
        let watcher = try geo.user(), poster = try geo.user()
        let events = try Events(geo, userId: watcher.id)
        let box = WatchOpenRequest(within: WithinRequest(minLat: -20, minLon: 179, maxLat: -15, maxLon: -179, kinds: ["tip"]), lease: 10)
        let opened = try geo.client.call(GeoAPI.watchOpen, box, token: watcher.token)
        #expect(opened.hits == [] && opened.center == nil)
        let east = try geo.create(PostDraft(kind: "tip", title: "Fiji east", lat: -17, lon: -179.5), token: poster.token)
        _ = try geo.create(PostDraft(kind: "offer", title: "Not a tip", lat: -17, lon: 179.5), token: poster.token)
        let entered = try events.next()
        #expect(entered.hit?.id == east.id && entered.hit?.distance == nil)

        geo.geo.watches.expire(at: Date().addingTimeInterval(11))
        let expired = try events.next()
        #expect(expired.type == .expired && expired.watchId == opened.watch.id && expired.seq == 2)
        #expect(geo.failure(GeoAPI.watchRenew, WatchRequest(id: opened.watch.id), token: watcher.token)?.code == .notFound)

        let reopened = try geo.client.call(GeoAPI.watchOpen, box, token: watcher.token)
        #expect(reopened.hits?.map(\.id) == [east.id])
        try geo.restartGeo()
        #expect(geo.failure(GeoAPI.watchRenew, WatchRequest(id: reopened.watch.id), token: watcher.token)?.code == .notFound)
    }

    @Test("divers near Zeeland: a people watch hears homes arrive, move a band, leave, and keeps to its limit")
    func people() throws {
        let geo = try GeoFixture()
        let me = try geo.user(), ann = try geo.user(), bob = try geo.user(), cid = try geo.user()
        func home(_ user: (token: String, id: String), _ lat: Double, _ lon: Double, discoverable: Bool = true) throws {
            _ = try geo.authClient.call(AuthAPI.locationSet, LocationSetRequest(lat: lat, lon: lon, discoverable: discoverable),
                                        token: user.token)
        }
        try home(me, 51.50, 3.60)
        try home(ann, 51.5030, 3.6000)  // the first band
        try geo.catchUpWithAuth()
        let events = try Events(geo, userId: me.id)
        let divers = WatchOpenRequest(usersNear: UsersNearRequest(lat: 51.50, lon: 3.60, radius: 5_000,
                                                                  attributes: ["certification": .string("AOWD")], limit: 2))
        let everyone = WatchOpenRequest(usersNear: UsersNearRequest(lat: 51.50, lon: 3.60, radius: 5_000, limit: 2))
        let opened = try geo.client.call(GeoAPI.watchOpen, everyone, token: me.token)
        #expect(opened.users == [NearUser(userId: ann.id, distance: 500)] && opened.hits == nil && opened.center?.lat == 51.50)
        let certified = try geo.client.call(GeoAPI.watchOpen, divers, token: me.token)
        #expect(certified.users == [])

        // Bob arrives 1.1 km away: everyone's watch hears him; certified, he enters the other too.
        try home(bob, 51.5100, 3.6000)
        try geo.catchUpWithAuth()
        let bobEntered = try events.next()
        #expect(bobEntered.type == .entered && bobEntered.watchId == opened.watch.id && bobEntered.seq == 1
                && bobEntered.user == NearUser(userId: bob.id, distance: 1_500) && bobEntered.hit == nil)
        _ = try geo.authClient.call(AuthAPI.profileUpdate, ProfileUpdateRequest(attributes: .set(["certification": .string("AOWD")])),
                                    token: bob.token)
        try geo.catchUpWithAuth()
        let certifiedBob = try events.next()
        #expect(certifiedBob.type == .entered && certifiedBob.watchId == certified.watch.id && certifiedBob.user?.userId == bob.id)

        // Bob moves a band nearer: changed. Cid, nearer than Bob, pushes him past the limit of 2.
        try home(bob, 51.5060, 3.6000)
        try geo.catchUpWithAuth()
        let moved = [try events.next(), try events.next()]  // one per watch, in either order
        #expect(Set(moved.map(\.watchId)) == [opened.watch.id, certified.watch.id])
        #expect(moved.allSatisfy { $0.type == .changed && $0.user == NearUser(userId: bob.id, distance: 1_000) })
        try home(cid, 51.5010, 3.6000)
        try geo.catchUpWithAuth()
        let pushedOut = try events.next(), cidEntered = try events.next()
        #expect(pushedOut.type == .left && pushedOut.userId == bob.id && pushedOut.seq == 3)
        #expect(cidEntered.type == .entered && cidEntered.user == NearUser(userId: cid.id, distance: 500) && cidEntered.seq == 4)

        // Ann goes private: she leaves, and Bob is back in the first two. Moving my own
        // home tells my watches nothing (I am never in them).
        try home(ann, 51.5030, 3.6000, discoverable: false)
        try geo.catchUpWithAuth()
        let annLeft = try events.next(), bobBack = try events.next()
        #expect(annLeft.type == .left && annLeft.userId == ann.id && bobBack.type == .entered && bobBack.user?.userId == bob.id)
        try home(me, 51.5001, 3.6000)
        try geo.catchUpWithAuth()
        #expect(try events.isQuiet())
        let fresh = try geo.client.call(GeoAPI.usersNear, everyone.usersNear!, token: me.token).users
        #expect(fresh == [NearUser(userId: cid.id, distance: 500), NearUser(userId: bob.id, distance: 1_000)])
    }

    @Test("bad opens are refused with the field at fault; a user holds at most 50 watches")
    func refusals() throws {
        let geo = try GeoFixture()
        let user = try geo.user()
        let search = SearchRequest(lat: 52, lon: 5, radius: 1_000)
        let box = WithinRequest(minLat: 0, minLon: 0, maxLat: 1, maxLon: 1)
        func refusal(_ request: WatchOpenRequest, token: String? = nil) -> (String, String?)? {
            geo.failure(GeoAPI.watchOpen, request, token: token ?? user.token).map { ($0.code.rawValue, $0.field) }
        }
        #expect(refusal(WatchOpenRequest()) ?? ("", nil) == ("invalid_argument", "search"))
        #expect(refusal(WatchOpenRequest(search: search, within: box)) ?? ("", nil) == ("invalid_argument", "within"))
        let people = UsersNearRequest(lat: 52, lon: 5, radius: 1_000)
        #expect(refusal(WatchOpenRequest(search: search, usersNear: people)) ?? ("", nil) == ("invalid_argument", "usersNear"))
        #expect(refusal(WatchOpenRequest(usersNear: UsersNearRequest(lat: 52, lon: 5, radius: 0))) ?? ("", nil)
                == ("invalid_argument", "usersNear.radius"))
        var paged = search
        paged.cursor = "abc"
        #expect(refusal(WatchOpenRequest(search: paged)) ?? ("", nil) == ("invalid_argument", "search.cursor"))
        #expect(refusal(WatchOpenRequest(search: search, lease: 601)) ?? ("", nil) == ("invalid_argument", "lease"))
        #expect(refusal(WatchOpenRequest(search: SearchRequest(lat: nil, lon: nil, place: "Nowhereville Xq", radius: 10)))
                ?? ("", nil) == ("not_found", "search.place"))
        #expect(geo.failure(GeoAPI.watchOpen, WatchOpenRequest(search: search))?.code == .unauthenticated)
        // Opening a watch over people is a search for people: the same thirty a minute.
        let seeker = try geo.user()
        for _ in 0..<19 { _ = try geo.client.call(GeoAPI.usersNear, people, token: seeker.token) }
        _ = try geo.client.call(GeoAPI.watchOpen, WatchOpenRequest(usersNear: people), token: seeker.token)
        #expect(refusal(WatchOpenRequest(usersNear: people), token: seeker.token)?.0 == "rate_limited")
        #expect(geo.failure(GeoAPI.usersNear, people, token: seeker.token)?.code == .rateLimited)
        for _ in 0..<GeoRules.watchesPerUser {
            _ = try geo.client.call(GeoAPI.watchOpen, WatchOpenRequest(search: search), token: user.token)
        }
        #expect(refusal(WatchOpenRequest(search: search))?.0 == "rate_limited")
        #expect(geo.geo.watches.count == GeoRules.watchesPerUser + 1)  // and the seeker's one
    }
}
