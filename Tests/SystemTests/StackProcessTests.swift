import Contracts
import Foundation
import ServiceClient
import ServiceKitTesting
import TestThreads
import Testing
import Wire
import ZeroMQ

/// The five service executables as `here up` will run them: separate processes
/// sharing a data directory, finding each other through `HEREABOUTS_*` endpoints.
@Suite("The five services as processes", .serialized, .ownThread)
struct StackProcessTests {
    @Test("a marketplace seeker, a tour guide and two divers go through their flows across all five processes, which stop on SIGTERM")
    func flows() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-stack-\(Identifier.random(count: 8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let services = ["auth", "catalogue", "geo", "favourites", "chat"]
        var environment = ["HEREABOUTS_DATA_DIR": directory.path, "HEREABOUTS_LOG_LEVEL": "warning"].merging(ChildProcess.testSettings) { $1 }
        var endpoints: [String: String] = [:]
        for service in services {
            endpoints[service] = try ChildProcess.freeEndpoint()
            environment[ServiceEndpoints.requestsVariable(service)] = endpoints[service]
            environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
        }
        var processes: [ChildProcess] = []
        defer { for process in processes.reversed() { process.terminate() } }
        for service in services {
            let process = try ChildProcess("\(service)-service", arguments: [], environment: environment,
                                           log: directory.appendingPathComponent("\(service).log"))
            processes.append(process)
            try #require(waitUntilHealthy(service: service, endpoint: endpoints[service]!, timeout: 30), "\(process.logText)")
        }
        // A generous timeout: CI runs other tests beside this one, and a 5 s timeout
        // failed there once (when a debug build's scrypt, BoringSSL at -O0, took 2.5 s
        // a registration; libsodium's takes about 0.4 s in any build).
        func client(_ service: String) -> ServiceClient {
            ServiceClient(service: service, endpoint: endpoints[service]!, timeout: 30, tries: 1)
        }
        let auth = client("auth"), catalogue = client("catalogue"), geo = client("geo"), favourites = client("favourites"),
            chat = client("chat")
        defer { [auth, catalogue, geo, favourites, chat].forEach { $0.close() } }

        // Each process's health body says who it is and what it holds, and each is ready
        // (its file takes writes; every feed it follows read to its end).
        let followed = ["auth": [], "catalogue": ["auth"], "geo": ["auth", "catalogue"], "favourites": ["auth", "catalogue"],
                        "chat": ["auth"]]
        for (service, client) in zip(services, [auth, catalogue, geo, favourites, chat]) {
            let health = try client.call(HealthAPI.health(service), Empty())
            #expect(health.service == service && health.status == "ok" && health.version == HereaboutsVersion.current)
            #expect(health.uptimeSeconds >= 0 && health.uptimeSeconds < 120)
            let memory = try #require(health.memory, "\(service) reports no memory")
            #expect(memory.residentBytes > 1_000_000 && memory.sqliteBytes > 0 && memory.sqliteBytes < memory.residentBytes)
            let ready = try eventually { () -> ReadyReply? in
                let reply = try client.call(HealthAPI.ready(service), Empty())
                return reply.ready ? reply : nil
            }
            #expect(ready.database == DatabaseReadiness(writable: true))
            #expect(ready.feeds.map(\.feed) == followed[service], "\(service)")
            #expect(ready.feeds.allSatisfy { $0.lag == 0 && ($0.secondsSinceCaughtUp ?? 99) < 10 })
        }
        // Until it answers (a follower may be a moment behind), for 20 s at most.
        func eventually<T>(_ body: () throws -> T?) throws -> T {
            let deadline = Date().addingTimeInterval(20)
            while Date() < deadline {
                if let value = try? body() { return value }
                Thread.sleep(forTimeInterval: 0.04)
            }
            throw ServiceError(code: .unavailable, message: "nothing after 20 s")
        }

        // Marketplace: a provider posts; an anonymous seeker finds it by term and place, and saves it.
        let provider = try auth.call(AuthAPI.register, RegisterRequest(email: "bikes@example.org", password: "password1"))
        let bike = try catalogue.call(CatalogueAPI.create, CreatePostRequest(PostDraft(kind: "offer", title: "City bike, blue",
                                                                                        lat: 52.0907, lon: 5.1214)),
                                      token: provider.accessToken).post
        let seeker = try auth.call(AuthAPI.anonymous, Empty())
        let found = try eventually {
            let reply = try geo.call(GeoAPI.search, SearchRequest(lat: nil, lon: nil, place: "Utrecht", radius: 5_000, q: "bike"))
            return reply.hits.isEmpty ? nil : reply
        }
        #expect(found.hits.map(\.id) == [bike.id] && found.center.place?.name == "Utrecht")
        let saved = try eventually { try favourites.call(FavouritesAPI.add, FavouriteRequest(postId: bike.id), token: seeker.accessToken) }
        #expect(saved.count == 1)

        // Tour guide: a sight with a notify radius; a walker enters it.
        let guide = try auth.call(AuthAPI.register, RegisterRequest(email: "guide@example.org", password: "password1"))
        let sight = try catalogue.call(CatalogueAPI.create, CreatePostRequest(PostDraft(kind: "sight", title: "Dom Tower", lat: 52.0908,
                                                                                         lon: 5.1213, notifyRadius: 100)),
                                       token: guide.accessToken).post
        let entered = try eventually {
            let reply = try geo.call(GeoAPI.fencesUpdate, FenceUpdateRequest(lat: 52.0909, lon: 5.1213), token: seeker.accessToken)
            return reply.inside.isEmpty ? nil : reply
        }
        #expect(entered.entered == [sight.id])

        // Divers: one finds the other near a place, and they chat; the message arrives on SUB.
        let ann = try auth.call(AuthAPI.register, RegisterRequest(email: "ann@example.org", password: "password1"))
        let bob = try auth.call(AuthAPI.register, RegisterRequest(email: "bob@example.org", password: "password1"))
        _ = try auth.call(AuthAPI.locationSet, LocationSetRequest(lat: 51.50, lon: 3.61, discoverable: true), token: bob.accessToken)
        let near = try eventually {
            let reply = try geo.call(GeoAPI.usersNear, UsersNearRequest(lat: nil, lon: nil, place: "Vlissingen", radius: 20_000),
                                     token: ann.accessToken)
            return reply.users.isEmpty ? nil : reply
        }
        #expect(near.users.map(\.userId) == [bob.user.id])
        let subscriber = try Context.shared.makeSocket(.subscribe)
        defer { subscriber.close() }
        try subscriber.set(.subscribe(Data(ChatAPI.messageTopic(userId: bob.user.id).utf8)))
        try subscriber.set(.receiveTimeout(milliseconds: 5000))
        try subscriber.connect(environment[ServiceEndpoints.eventsVariable("chat")]!)
        Thread.sleep(forTimeInterval: 0.3)
        let message = try eventually {
            try chat.call(ChatAPI.send, SendMessageRequest(to: bob.user.id, text: "Dive Saturday?"), token: ann.accessToken).message
        }
        let frames = try #require(try subscriber.receiveMessage())
        #expect(try JSONValueDecoder().decode(ChatMessage.self, from: frames[1]) == message)
        #expect(try chat.call(ChatAPI.conversations, ConversationsRequest(), token: bob.accessToken).conversations.first?.unread == 1)

        // Every process stops cleanly on SIGTERM.
        for (service, process) in zip(services, processes).reversed() {
            let seconds = process.terminate()
            #expect(process.process.terminationStatus == 0, "\(service): \(process.logText)")
            #expect(seconds < 5, "\(service) took \(seconds) s to stop")
        }
        processes.removeAll()
    }
}
