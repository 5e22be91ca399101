import Contracts
import EdgeFixtures
import Foundation
import ServiceKitTesting
import StackClient
import TestThreads
import Testing
import Wire

/// The README's flows against an edge the tests did not start: the Compose stack of
/// `make compose-test`, whose script runs this suite with `HEREABOUTS_COMPOSE_EDGE_PORT`
/// naming the published port. Elsewhere it does not run.
@Suite("The README's flows against the Compose stack", .serialized, .ownThread,
       .enabled(if: ProcessInfo.processInfo.environment["HEREABOUTS_COMPOSE_EDGE_PORT"] != nil))
struct ComposeFlowTests {
    let port = Int(ProcessInfo.processInfo.environment["HEREABOUTS_COMPOSE_EDGE_PORT"] ?? "") ?? 8080

    private func register(_ name: String) throws -> SessionReply {
        let email = "\(name)-\(Identifier.random(count: 6))@example.org"
        let reply = try EdgeClient(port: port).post("/v1/auth/register", ["email": .string(email), "password": "password1",
                                                                           "displayName": .string(name)])
        try #require(reply.status == 201, "\(reply)")
        return try reply.decode(SessionReply.self)
    }

    @Test("a post with a photo found near a named place, a favourite, a chat over the WebSocket, a live query and a trip's calendar")
    func flows() throws {
        let shop = try register("Shop"), seeker = try register("Seeker")
        let shopClient = EdgeClient(port: port).signed(shop.accessToken), seekerClient = EdgeClient(port: port).signed(seeker.accessToken)

        // The seeker's app holds its events socket, with a live query around Utrecht.
        let socket = try EventSocketClient(port: port)
        defer { socket.close() }
        socket.authenticate(seeker.accessToken)
        #expect(socket.next(ofType: "ready") != nil)
        _ = socket.send(#"{"type":"watch","id":"bikes","search":{"place":"Utrecht","radius":5000,"q":"bike"}}"#)
        let opened = try #require(socket.next(ofType: "watch.opened"))
        #expect(opened["center"]?["place"]?["name"]?.stringValue == "Utrecht")

        // A post with a photo; the live query sees it enter; search finds it by the place's name.
        let created = try shopClient.post("/v1/posts", ["kind": "offer", "title": "City bike, blue", "lat": 52.0907, "lon": 5.1214])
        try #require(created.status == 201, "\(created)")
        let post = try created.decode(PostReply.self).post
        let upload = try shopClient.send("POST", "/v1/posts/\(post.id)/images", body: TestImages.png(width: 4, height: 3), contentType: "image/png")
        #expect(upload.status == 201, "\(upload)")
        let entered = try #require(socket.next(ofType: "watch.entered", timeout: 30), "the live query saw nothing")
        #expect(entered["hit"]?["id"]?.stringValue == post.id)
        let found = try seekerClient.get("/v1/search?place=Utrecht&radius=5000&q=bike").decode(SearchReply.self)
        #expect(found.hits.map(\.id) == [post.id] && found.center.place?.name == "Utrecht")
        let image = try upload.decode(ImageReply.self).image
        let photo = try EdgeClient(port: port).get("/v1/images/\(image.id)")
        #expect(photo.status == 200 && photo.header("Content-Type") == "image/png")

        // A favourite, with the post.
        #expect(try seekerClient.put("/v1/favourites/\(post.id)").status == 200)
        let favourites = try seekerClient.get("/v1/favourites?expand=posts").decode(FavouriteEntriesPage.self)
        #expect(favourites.items.first?.post?.id == post.id)

        // A message to the shop arrives on the seeker's own socket too (their other devices).
        let sent = try seekerClient.post("/v1/messages", ["to": .string(shop.user.id), "text": "Is the bike still there?"])
        try #require(sent.status == 201, "\(sent)")
        #expect(socket.next(ofType: "chat.message")?["message"]?["text"]?.stringValue == "Is the bike still there?")

        // A trip and its calendar.
        let trip = try seekerClient.post("/v1/trips", ["title": "Utrecht weekend", "city": "Utrecht", "countryCode": "NL",
                                                       "start": "2027-04-02", "end": "2027-04-04"])
        try #require(trip.status == 201, "\(trip)")
        let tripID = try #require(try trip.object()["trip"]?["id"]?.stringValue)
        let calendar = try seekerClient.get("/v1/trips/\(tripID)/calendar.ics")
        #expect(calendar.status == 200 && calendar.text.hasPrefix("BEGIN:VCALENDAR") && calendar.text.contains("Utrecht weekend"))
    }
}
