import Contracts
import EdgeFixtures
import Foundation
import ServiceKitTesting
import StackClient
import TestThreads
import Testing
import Wire

/// Until `body` gives a value (geo follows catalogue and auth a moment behind), for 30 s at most.
func eventually<T>(_ what: String, _ body: () throws -> T?) throws -> T {
    let deadline = Date().addingTimeInterval(30)
    var last: (any Error)?
    while Date() < deadline {
        do {
            if let value = try body() { return value }
        } catch {
            last = error
        }
        Thread.sleep(forTimeInterval: 0.05)
    }
    throw RawConnection.Failure(description: "\(what): nothing after 30 s\(last.map { " (\($0))" } ?? "")")
}

/// Each seed app's main flow, as its phone app would go through it: over HTTP and
/// the events WebSocket, against `here up` running the five services and the edge.
@Suite("The seed apps over HTTP", .serialized, .ownThread)
struct EdgeAppTests {
    @Test("marketplace: a provider posts an offer with a photo; a seeker finds it near a named place, as JSON and GeoJSON, and saves it with the provider's contact")
    func marketplace() throws {
        let stack = try EdgeStack("market")
        let provider = try stack.register("bikes@example.org", displayName: "Bike Shop")
        let shop = stack.client.signed(provider.accessToken)
        let profile = try shop.patch("/v1/me", ["phone": "+31 6 1234 5678", "contact": ["showPhone": .bool(true)]])
        #expect(profile.status == 200, "\(profile)")

        // The post gets its town and time zone from the nearest place, as `here post create` gives them.
        let created = try shop.post("/v1/posts", ["kind": "offer", "title": "City bike, blue", "lat": 52.0907, "lon": 5.1214,
                                                  "price": ["amount": 85, "currency": "EUR"]])
        try #require(created.status == 201, "\(created)")
        let post = try created.decode(PostReply.self).post
        #expect(created.header("Location") == "/v1/posts/\(post.id)" && created.header("ETag") == "\"1\"")
        #expect(post.place == PostPlace(city: "Utrecht", countryCode: "NL") && post.timezone == "Europe/Amsterdam")

        // A photo straight from the phone, its location in EXIF: stored without it.
        let upload = try shop.send("POST", "/v1/posts/\(post.id)/images", body: TestImages.pngWithLocation, contentType: "image/png")
        try #require(upload.status == 201, "\(upload)")
        let image = try upload.decode(ImageReply.self).image
        #expect(upload.header("Location") == "/v1/images/\(image.id)")
        let photo = try stack.client.get("/v1/images/\(image.id)")
        #expect(photo.status == 200 && photo.header("Content-Type") == "image/png")
        #expect(photo.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(photo.header("X-Content-Type-Options") == "nosniff", "a poster's bytes are never sniffed as another type")
        #expect(photo.body.starts(with: [0x89, 0x50, 0x4E, 0x47]) && photo.body.count < TestImages.pngWithLocation.count)
        #expect(photo.body.range(of: Data("GPSLatitude".utf8)) == nil && photo.body.range(of: Data("PhoneMaker".utf8)) == nil)
        let cached = try stack.client.get("/v1/images/\(image.id)", headers: [("If-None-Match", photo.header("ETag") ?? "")])
        #expect(cached.status == 304 && cached.body.isEmpty)

        // A seeker, anonymous, searches around Utrecht by name.
        let seeker = stack.client.signed(try stack.anonymous().accessToken)
        let search = try eventually("the post in search") { () -> HTTPReply? in
            let reply = try seeker.get("/v1/search?place=Utrecht&radius=5000&q=bike")
            let hits = try reply.decode(SearchReply.self).hits
            return hits.first?.id == post.id ? reply : nil
        }
        let hits = try search.decode(SearchReply.self)
        #expect(hits.center.place?.name == "Utrecht" && hits.hits.count == 1 && hits.hits[0].title == "City bike, blue")
        #expect(search.header("Content-Type") == "application/json")
        let map = try seeker.get("/v1/search?place=Utrecht&radius=5000&q=bike", headers: [("Accept", "application/geo+json")])
        #expect(map.status == 200 && map.header("Content-Type") == "application/geo+json")
        let collection = try map.json()
        #expect(collection["type"]?.stringValue == "FeatureCollection")
        let feature = try #require(collection["features"]?.arrayValue?.first)
        #expect(feature["id"]?.stringValue == post.id && feature["properties"]?["title"]?.stringValue == "City bike, blue")
        #expect(feature["geometry"]?["coordinates"]?.arrayValue?.compactMap(\.doubleValue) == [5.1214, 52.0907])

        // Saved, and the list shows the post with the provider's shown phone (not their email).
        let saved = try seeker.put("/v1/favourites/\(post.id)")
        #expect(try saved.status == 200 && (try saved.object())["count"] == .number(.integer(1)), "\(saved)")
        let contains = try seeker.get("/v1/favourites/contains?ids=\(post.id),nope")
        #expect(contains.status == 200 && contains.text.contains(post.id), "\(contains)")
        let list = try seeker.get("/v1/favourites?expand=posts")
        let page = try list.decode(FavouriteEntriesPage.self)
        #expect(page.total == 1 && page.items.first?.post?.images.map(\.id) == [image.id], "\(list)")
        #expect(page.items.first?.provider?.phone == "+31 6 1234 5678" && page.items.first?.provider?.email == nil)
        #expect(page.items.first?.provider?.displayName == "Bike Shop")
    }

    @Test("dive buddies: a diver finds another near a typed place by certification, and they chat, each message arriving live on the other's WebSocket")
    func divers() throws {
        let stack = try EdgeStack("divers")
        let ann = try stack.register("ann@example.org", displayName: "Ann")
        let bea = try stack.register("bea@example.org", displayName: "Bea")
        let annClient = stack.client.signed(ann.accessToken), beaClient = stack.client.signed(bea.accessToken)
        #expect(try annClient.patch("/v1/me", ["attributes": ["certification": "AOWD"]]).status == 200)
        #expect(try annClient.put("/v1/me/location", ["lat": 51.4425, "lon": 3.5736, "discoverable": true]).status == 200)

        // Both apps hold their events socket.
        let annSocket = try EventSocketClient(port: stack.port)
        annSocket.authenticate(ann.accessToken)
        let ready = try #require(annSocket.next())
        #expect(ready["type"] == .string("ready") && ready["userId"] == .string(ann.user.id))
        let beaSocket = try EventSocketClient(port: stack.port)
        beaSocket.authenticate(bea.accessToken)
        #expect(beaSocket.next()?["type"] == .string("ready"))

        // Bea looks for advanced divers near Vlissingen.
        let near = try eventually("Ann near Vlissingen") { () -> UsersNearReply? in
            let reply = try beaClient.get("/v1/users/near?place=Vlissingen&radius=20000&attributes=%7B%22certification%22%3A%22AOWD%22%7D")
            let near = try reply.decode(UsersNearReply.self)
            return near.users.contains { $0.userId == ann.user.id } ? near : nil
        }
        #expect(near.center.place?.name == "Vlissingen" && near.users.allSatisfy { $0.distance.truncatingRemainder(dividingBy: 500) == 0 })
        // The same query as a browser's URLSearchParams writes it: spaces as `+`.
        let form = try beaClient.get("/v1/users/near?place=Vlissingen&radius=20000&attributes=%7B%22certification%22%3A+%22AOWD%22%7D")
        #expect(try form.status == 200 && form.decode(UsersNearReply.self).users.contains { $0.userId == ann.user.id }, "\(form)")
        let anns = try beaClient.get("/v1/users/\(ann.user.id)").decode(PublicUserReply.self).user
        #expect(anns.displayName == "Ann" && anns.attributes["certification"] == .string("AOWD"))

        // Bea writes; Ann's socket has it; Ann answers in the same conversation; Bea's socket has that. Each
        // member's sockets get every message of the conversation, their own too (for their other devices).
        let sent = try beaClient.post("/v1/messages", ["to": .string(ann.user.id), "text": "Dive at Zoutelande on Sunday?"])
        try #require(sent.status == 201, "\(sent)")
        let message = try sent.decode(MessageReply.self).message
        let delivered = try #require(annSocket.next(ofType: "chat.message"), "nothing on Ann's socket")
        #expect(delivered["message"]?["text"]?.stringValue == "Dive at Zoutelande on Sunday?")
        #expect(delivered["message"]?["conversationId"]?.stringValue == message.conversationId)
        #expect(delivered["message"]?["senderId"]?.stringValue == bea.user.id)
        #expect(beaSocket.next(ofType: "chat.message")?["message"]?["id"]?.stringValue == message.id)
        let answer = try annClient.post("/v1/messages", ["conversationId": .string(message.conversationId), "text": "Yes, 9:00"])
        #expect(answer.status == 201)
        #expect(beaSocket.next(ofType: "chat.message")?["message"]?["text"]?.stringValue == "Yes, 9:00")
        #expect(annSocket.next(ofType: "chat.message")?["message"]?["text"]?.stringValue == "Yes, 9:00")
        // Nothing else: no one else's events.
        #expect(annSocket.next(timeout: 0.3) == nil)
        #expect(beaSocket.next(timeout: 0.3) == nil)

        let conversations = try annClient.get("/v1/conversations").decode(ConversationsReply.self).conversations
        #expect(conversations.count == 1 && conversations[0].unread == 1)
        let messages = try annClient.get("/v1/conversations/\(message.conversationId)/messages").decode(MessagesReply.self).messages
        #expect(messages.map(\.text) == ["Dive at Zoutelande on Sunday?", "Yes, 9:00"])
        let read = try annClient.post("/v1/conversations/\(message.conversationId)/read", ["seq": .number(.integer(Int64(messages[0].seq)))])
        #expect(try read.status == 200 && (try read.object())["unread"] == .number(.integer(0)), "\(read)")
        // A block, and Bea's next message is refused.
        #expect(try annClient.put("/v1/blocks/\(bea.user.id)").status == 204)
        let blocked = try beaClient.post("/v1/messages", ["to": .string(ann.user.id), "text": "hello?"])
        #expect(blocked.status == 403 && blocked.problemCode == "permission_denied")
        annSocket.close()
        beaSocket.close()
    }

    @Test("restaurant finder: a feed imported, re-imported with a change, and searched for what is open at a given time")
    func restaurants() throws {
        let stack = try EdgeStack("food")
        let owner = stack.client.signed(try stack.register("feeds@example.org").accessToken)
        var feed: [JSONValue] = [
            ["kind": "restaurant", "title": "Zuid Pizza", "lat": 52.3, "lon": 4.9, "hours": "Mo-Fr 11:00-14:00",
             "timezone": "Europe/Amsterdam", "ref": "z"],
            ["kind": "restaurant", "title": "Anker Diner", "lat": 52.301, "lon": 4.901, "hours": "Sa-Su 10:00-22:00",
             "timezone": "Europe/Amsterdam", "ref": "a"],
            ["kind": "restaurant", "title": "Midden Cafe", "lat": 52.302, "lon": 4.902, "hours": "24/7",
             "timezone": "Europe/Amsterdam", "ref": "m", "tags": ["vegan"]],
        ]
        let first = try owner.post("/v1/posts/import", ["posts": .array(feed)])
        #expect(first.status == 200, "\(first)")
        let imported = try first.decode(ImportReply.self)
        #expect(imported.created == 3 && imported.ids.count == 3)
        feed[0] = ["kind": "restaurant", "title": "Zuid Pizza & Pasta", "lat": 52.3, "lon": 4.9, "hours": "Mo-Fr 11:00-14:00",
                   "timezone": "Europe/Amsterdam", "ref": "z"]
        let again = try owner.post("/v1/posts/import", ["posts": .array(feed)]).decode(ImportReply.self)
        #expect(again.created == 0 && again.updated == 1 && again.unchanged == 2 && again.ids == imported.ids)

        // Monday 23 November 2026, noon in Amsterdam: the pizzeria and the café are open, the weekend diner is not.
        let diner = stack.client
        let open = try eventually("the renamed pizzeria") { () -> SearchReply? in
            let reply = try diner.get("/v1/search?lat=52.3&lon=4.9&radius=1000&kinds=restaurant&openNow=true&at=2026-11-23T11:00:00Z")
            let hits = try reply.decode(SearchReply.self)
            return hits.hits.contains { $0.title == "Zuid Pizza & Pasta" } ? hits : nil
        }
        #expect(Set(open.hits.map(\.title)) == ["Zuid Pizza & Pasta", "Midden Cafe"])
        #expect(open.hits.allSatisfy { $0.openStatus == "open" || $0.openStatus == "closes_soon" })
        let saturday = try diner.get("/v1/search?lat=52.3&lon=4.9&radius=1000&openNow=true&at=2026-11-28T11:00:00Z").decode(SearchReply.self)
        #expect(Set(saturday.hits.map(\.title)) == ["Anker Diner", "Midden Cafe"])
        // Paging: one per page, with a Link to the next.
        let page = try diner.get("/v1/search?lat=52.3&lon=4.9&radius=1000&limit=1")
        let link = try #require(page.header("Link"))
        #expect(link.hasPrefix("</v1/search?") && link.hasSuffix(">; rel=\"next\"") && link.contains("limit=1"))
        let next = String(link.dropFirst().prefix { $0 != ">" })
        let second = try diner.get(next).decode(SearchReply.self)
        #expect(try second.hits.count == 1 && second.hits[0].id != (try page.decode(SearchReply.self)).hits[0].id)
        // A map's box takes tags and openNow too (judged now: the café never closes).
        let box = "/v1/within?minLat=52.29&minLon=4.89&maxLat=52.31&maxLon=4.91"
        #expect(try diner.get(box + "&tags=VEGAN").decode(HitsReply.self).hits.map(\.title) == ["Midden Cafe"])
        #expect(try diner.get(box + "&openNow=true").decode(HitsReply.self).hits.contains { $0.title == "Midden Cafe" })
        // The owner lists their posts by city, as a page.
        let mine = try owner.get("/v1/posts?kind=restaurant&limit=100")
        #expect(try mine.status == 200 && (try mine.decode(PostListReply.self)).posts.count == 3, "\(mine)")
    }

    @Test("travel tips: a trip with a buddy invited by email, its calendar file, and the buddy leaving")
    func trips() throws {
        let stack = try EdgeStack("trips")
        let ann = try stack.register("ann@example.org", displayName: "Ann")
        let bea = try stack.register("bea@example.org", displayName: "Bea")
        let annClient = stack.client.signed(ann.accessToken), beaClient = stack.client.signed(bea.accessToken)
        let created = try annClient.post("/v1/trips", ["title": "New Year in Köln", "city": "Köln", "countryCode": "DE",
                                                        "start": "2026-12-30", "end": "2026-12-31"])
        try #require(created.status == 201, "\(created)")
        let trip = try created.decode(TripReply.self).trip
        let found = try annClient.get("/v1/users/lookup?email=bea@example.org")
        #expect(found.status == 200, "\(found)")
        let buddy = try found.decode(PublicUserReply.self).user
        #expect(buddy.id == bea.user.id)
        let invited = try annClient.post("/v1/trips/\(trip.id)/members", ["userId": .string(buddy.id)])
        #expect(try invited.status == 200 && (try invited.decode(TripReply.self)).trip.members?.count == 2, "\(invited)")

        #expect(try beaClient.get("/v1/trips").decode(TripsReply.self).trips.map(\.id) == [trip.id])
        let calendar = try beaClient.get("/v1/trips/\(trip.id)/calendar.ics")
        #expect(calendar.status == 200 && calendar.header("Content-Type") == "text/calendar; charset=utf-8")
        #expect(calendar.text.hasPrefix("BEGIN:VCALENDAR\r\n") && calendar.text.contains("DTSTART;VALUE=DATE:20261230\r\n")
                && calendar.text.contains("DTEND;VALUE=DATE:20270101\r\n") && calendar.text.contains("UID:\(trip.id)@hereabouts"))

        #expect(try beaClient.delete("/v1/trips/\(trip.id)/members/me").status == 204)
        let gone = try beaClient.get("/v1/trips/\(trip.id)")
        // No longer a member: permission_denied, as for anyone not on the trip (PROTOCOL.md, trips).
        #expect(gone.status == 403 && gone.problemCode == "permission_denied" && gone.header("Content-Type") == "application/problem+json",
                "\(gone)")
        #expect(try annClient.get("/v1/trips/\(trip.id)").decode(TripReply.self).trip.members?.count == 1)
        #expect(try annClient.delete("/v1/trips/\(trip.id)").status == 204)
    }

    @Test("tour guide: the ten nearest sights, and walking into and out of one's fence arrives on the WebSocket")
    func tourGuide() throws {
        let stack = try EdgeStack("tour")
        let guide = stack.client.signed(try stack.register("guide@example.org").accessToken)
        // Twelve sights on a line east of the Dom, 150 m apart, each with a 100 m fence.
        let sights: [JSONValue] = (0..<12).map { index in
            ["kind": "sight", "title": .string("Sight \(index)"), "lat": 52.0907, "lon": .number(.double(5.1214 + Double(index) * 0.0022)),
             "notifyRadius": 100, "ref": .string("s\(index)")]
        }
        let imported = try guide.post("/v1/posts/import", ["posts": .array(sights)]).decode(ImportReply.self)
        #expect(imported.created == 12)

        let visitor = try stack.anonymous()
        let app = stack.client.signed(visitor.accessToken)
        let nearest = try eventually("all twelve sights") { () -> HitsReply? in
            let reply = try app.get("/v1/nearest?lat=52.0907&lon=5.1214&k=10&kinds=sight").decode(HitsReply.self)
            return reply.hits.count == 10 && reply.hits.last?.title == "Sight 9" ? reply : nil
        }
        #expect(nearest.hits.map(\.title) == (0..<10).map { "Sight \($0)" })
        #expect(zip(nearest.hits, nearest.hits.dropFirst()).allSatisfy { ($0.distance ?? 0) <= ($1.distance ?? 0) })
        let plan = try app.get("/v1/fences/plan?lat=52.0907&lon=5.1214&max=3")
        #expect(plan.status == 200 && plan.text.contains(imported.ids[0]), "\(plan)")

        // The socket signs in with the upgrade's Authorization header: ready at once.
        let socket = try EventSocketClient(port: stack.port, headers: [("Authorization", "Bearer \(visitor.accessToken)")])
        #expect(socket.next()?["type"] == .string("ready"))
        let entered = try app.post("/v1/fences/update", ["lat": 52.0907, "lon": .number(.double(5.1214 + 0.0022 * 3))])
        #expect(try entered.status == 200 && (try entered.object())["entered"] == .array([.string(imported.ids[3])]), "\(entered)")
        let enteredEvent = try #require(socket.next(ofType: "fence.entered"))
        #expect(enteredEvent["postId"] == .string(imported.ids[3]) && enteredEvent["at"]?.stringValue != nil)
        _ = try app.post("/v1/fences/update", ["lat": 52.2, "lon": 5.3])
        #expect(socket.next(ofType: "fence.exited")?["postId"] == .string(imported.ids[3]))
        socket.close()
    }
}
