import EdgeFixtures
import Foundation
import HereaboutsKit
import ServiceKitTesting
import Testing

/// The seed apps' main flows through HereaboutsKit alone, against `here up`'s processes.
@Suite("HereaboutsKit: the apps' flows")
struct AppFlowTests {
    @Test("marketplace: a shop posts an offer with a photo; an anonymous seeker finds it near a named place, saves it and sees the contact")
    func marketplace() async throws {
        let stack = try EdgeStack("kit-market"), port = stack.port
        defer { stack.stop() }
        try await onOwnThread("kit-market") {
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
    }

    @Test("dive buddies: divers with attributes near a place; a chat message arrives live")
    func diveBuddies() async throws {
        let stack = try EdgeStack("kit-dive"), port = stack.port
        defer { stack.stop() }
        try await onOwnThread("kit-dive") {
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
    }
}
