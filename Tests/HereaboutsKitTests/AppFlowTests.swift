import EdgeFixtures
import Foundation
import HereaboutsKit
import ServiceKitTesting
import TestThreads
import Testing

/// The seed apps' main flows through HereaboutsKit alone, against `here up`'s processes.
@Suite("HereaboutsKit: the apps' flows", .ownThread)
struct AppFlowTests {
    @Test("marketplace: a shop posts an offer with a photo; an anonymous seeker finds it near a named place, saves it and sees the contact")
    func marketplace() async throws {
        let stack = try EdgeStack("kit-market"), port = stack.port
        defer { stack.stop() }
        let shop = kit(port)
        try await shop.register(email: "lamps@example.org", password: "password1", displayName: "Lamp Shop")
        let post = try await shop.createPost(PostDraft(kind: "offer", lat: 52.0907, lon: 5.1214, price: .init(amount: 25, currency: "EUR"),
                                                       tags: ["lamp"], text: "Brass desk lamp", title: "Desk lamp"))
        #expect(post.price?.amount == 25)
        let image = try await shop.addImage(to: post.id, data: TestImages.png(width: 4, height: 3), contentType: .png)
        #expect(image.width == 4)

        let seeker = kit(port)
        let anonymous = try await seeker.signInAnonymously()
        #expect(anonymous.anonymous)
        var found: [Hit] = []
        for try await hit in seeker.search(near: .place("Utrecht"), radius: 5_000, query: "lamp") { found.append(hit) }
        #expect(found.map(\.id) == [post.id])
        #expect(try await seeker.addFavourite(post.id) == 1)
        var saved: [Favourite] = []
        for try await favourite in seeker.favourites(expandingPosts: true) { saved.append(favourite) }
        #expect(saved.map(\.postId) == [post.id])
        #expect(saved.first?.provider?.displayName == "Lamp Shop")
        let photo = try await seeker.image(try #require(try await seeker.post(post.id).images.first).id)
        #expect(photo.starts(with: [0x89, 0x50, 0x4E, 0x47]))
    }

    @Test("dive buddies: divers with attributes near a place; a chat message arrives live")
    func diveBuddies() async throws {
        let stack = try EdgeStack("kit-dive"), port = stack.port
        defer { stack.stop() }
        let ann = kit(port), bea = kit(port)
        let annUser = try await ann.register(email: "ann@example.org", password: "password1", displayName: "Ann")
        try await bea.register(email: "bea@example.org", password: "password1", displayName: "Bea")
        try await ann.updateProfile(attributes: .init(additionalProperties: ["certification": "AOWD"]))
        try await ann.setLocation(latitude: 52.09, longitude: 5.12)
        let near = try await bea.usersNear(.place("Utrecht"), radius: 20_000, attributes: ["certification": "AOWD"])
        #expect(near.map(\.userId) == [annUser.id])

        var events = ann.events().makeAsyncIterator()
        #expect(try await firstEvent(&events, within: 20, where: \.isConnected) == .connected(reconnected: false))
        try await bea.sendMessage("Dive on Sunday?", to: annUser.id)
        let heard = try await firstEvent(&events, within: 20) { $0.chatText != nil }
        #expect(heard?.chatText == "Dive on Sunday?")
    }

    @Test("restaurant finder: a list imported twice, what is open on a Monday noon, the results by distance and by name, the typed words marked, in English and German")
    func restaurants() async throws {
        let stack = try EdgeStack("kit-food"), port = stack.port
        defer { stack.stop() }
        let feeds = kit(port)
        try await feeds.register(email: "feeds@example.org", password: "password1")
        let list = [
            PostDraft(hours: "Mo-Fr 11:00-14:00", kind: "restaurant", lat: 52.3, lon: 4.9, ref: "z", timezone: "Europe/Amsterdam", title: "Zuid Pizza"),
            PostDraft(hours: "Sa-Su 10:00-22:00", kind: "restaurant", lat: 52.301, lon: 4.901, ref: "a", timezone: "Europe/Amsterdam", title: "Anker Diner"),
            PostDraft(hours: "24/7", kind: "restaurant", lat: 52.302, lon: 4.902, ref: "m", timezone: "Europe/Amsterdam", title: "Midden Cafe"),
        ]
        let first = try await feeds.importPosts(list)
        #expect(first.created == 3)
        let again = try await feeds.importPosts(list)
        #expect(again.unchanged == 3 && again.ids == first.ids)

        let diner = kit(port)
        try await diner.signInAnonymously()
        let monday = try Date("2026-11-23T11:00:00Z", strategy: .iso8601)
        let byDistance = try await eventually("the three restaurants indexed") {
            let hits = try await diner.search(near: .coordinate(latitude: 52.3, longitude: 4.9), radius: 1_000, kinds: ["restaurant"],
                                              order: .distance).reduce(into: []) { $0.append($1.title) }
            return hits.count == 3 ? hits : nil
        }
        #expect(byDistance == ["Zuid Pizza", "Anker Diner", "Midden Cafe"])
        let byName = try await diner.search(near: .coordinate(latitude: 52.3, longitude: 4.9), radius: 1_000, order: .title)
            .reduce(into: []) { $0.append($1.title) }
        #expect(byName == ["Anker Diner", "Midden Cafe", "Zuid Pizza"])
        let open = try await diner.search(near: .coordinate(latitude: 52.3, longitude: 4.9), radius: 1_000, openAt: monday, pageSize: 1)
            .reduce(into: []) { $0.append($1.title) }
        #expect(Set(open) == ["Zuid Pizza", "Midden Cafe"])

        // The list marks what was typed, in UTF-16 ranges that NSRange and String both take.
        let typed = try await diner.search(near: .coordinate(latitude: 52.3, longitude: 4.9), radius: 1_000, query: "zuid piz")
            .reduce(into: []) { $0.append($1) }
        let marks = try #require(typed.first?.highlights?.title)
        #expect(typed.map(\.title) == ["Zuid Pizza"] && marks.map(\.nsRange) == [NSRange(location: 0, length: 4), NSRange(location: 5, length: 5)])
        #expect(marks.compactMap { $0.range(in: "Zuid Pizza").map { String("Zuid Pizza"[$0]) } } == ["Zuid", "Pizza"])

        // The device's languages name places and countries: German, and English for the other half of the app's users.
        let german = kit(port, languages: ["de-DE", "en"]), english = kit(port, languages: ["en-GB"])
        let netherlands = try await german.country("nl")
        #expect([netherlands.name, netherlands.continentName] == ["Niederlande", "Europa"] && netherlands.flag == "🇳🇱")
        #expect(try await english.country("NL").name == "Netherlands")
        #expect(try await german.places(named: "Cologne").first?.name == "Köln")
        #expect(try await english.places(named: "Köln").first?.name == "Cologne")
        #expect(try await kit(port, languages: ["nl"]).places(named: "Kölle").first?.name == "Keulen")
    }

    @Test("travel tips: a trip, a buddy found by email and invited, and the trip's calendar")
    func travel() async throws {
        let stack = try EdgeStack("kit-trips"), port = stack.port
        defer { stack.stop() }
        let ann = kit(port), bea = kit(port)
        try await ann.register(email: "ann@example.org", password: "password1", displayName: "Ann")
        let beaUser = try await bea.register(email: "bea@example.org", password: "password1", displayName: "Bea")
        let trip = try await ann.createTrip(title: "New Year in Köln", city: "Köln", countryCode: "DE", start: "2026-12-30", end: "2026-12-31")
        let buddy = try await ann.user(email: "bea@example.org")
        #expect(buddy.id == beaUser.id && buddy.displayName == "Bea")
        let shared = try await ann.invite(buddy.id, toTrip: trip.id)
        #expect(shared.members?.map(\.role) == [.owner, .invited])
        #expect(try await bea.trips().map(\.role) == [.invited])
        #expect(try await bea.trip(trip.id).title == "New Year in Köln")
        let joined = try await bea.acceptTrip(trip.id)
        #expect(joined.role == .member && joined.members?.last?.joinedAt != nil)
        let calendar = try await bea.tripCalendar(trip.id)
        #expect(calendar.hasPrefix("BEGIN:VCALENDAR\r\n") && calendar.contains("DTSTART;VALUE=DATE:20261230\r\n"))
    }

    @Test("tour guide: the ten nearest sights, a rating, and walking into a sight's fence arriving live")
    func tourGuide() async throws {
        let stack = try EdgeStack("kit-tour"), port = stack.port
        defer { stack.stop() }
        let guide = kit(port)
        try await guide.register(email: "guide@example.org", password: "password1")
        // Twelve sights on a line east of the Dom, 150 m apart, each with a 100 m fence.
        let sights = (0..<12).map { index in
            PostDraft(kind: "sight", lat: 52.0907, lon: 5.1214 + Double(index) * 0.0022, notifyRadius: 100, ref: "s\(index)",
                      title: "Sight \(index)")
        }
        let ids = try await guide.importPosts(sights).ids

        let visitor = kit(port)
        try await visitor.signInAnonymously()
        let nearest = try await eventually("all twelve sights indexed") {
            let hits = try await visitor.nearest(latitude: 52.0907, longitude: 5.1214, count: 10, kinds: ["sight"])
            return hits.last?.title == "Sight 9" ? hits : nil
        }
        #expect(nearest.map(\.title) == (0..<10).map { "Sight \($0)" })
        // Rating needs an account: the visitor keeps the anonymous one, upgraded.
        let refused = await #expect(throws: HereaboutsError.self) { try await visitor.rate(ids[0], stars: 4) }
        #expect(refused?.code == "permission_denied")
        let upgraded = try await visitor.upgrade(email: "visitor@example.org", password: "password1")
        #expect(!upgraded.anonymous)
        let rating = try await visitor.rate(ids[0], stars: 4)
        #expect(rating.count == 1 && rating.average == 4)

        let regions = try await visitor.planFences(latitude: 52.0907, longitude: 5.1214, max: 3)
        #expect(regions.map(\.postId) == Array(ids.prefix(3)) && regions.allSatisfy { $0.radius == 100 })
        var events = visitor.events().makeAsyncIterator()
        #expect(try await firstEvent(&events, within: 20, where: \.isConnected) != nil)
        let crossing = try await visitor.updateFences(latitude: 52.0907, longitude: 5.1214 + 0.0022 * 3)
        #expect(crossing.entered == [ids[3]])
        let entered = try await firstEvent(&events, within: 20) { $0.enteredFence != nil }
        #expect(entered?.enteredFence == ids[3])
    }
}
