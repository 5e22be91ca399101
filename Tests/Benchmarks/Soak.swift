import ArgumentParser
import Contracts
import EdgeFixtures
import Foundation
import Spawn
import ServiceClient
import ServiceKitTesting
import Synchronization
import Wire

/// `hereabouts-bench soak`: the hardening issue's load test. The five services run
/// as processes on loopback; each client works through the apps' flows in a loop
/// (publish a post with a photo, edit it, search around it, save the last one,
/// chat with a buddy, rate, plan a trip, delete what it published) until the time
/// or its op budget runs out. Passes with no error other than the expected ones,
/// every service's memory but SQLite's page caches at the end within 10% of where it
/// stood after the first minute, and its whole resident set at the end within 10% of
/// where it stood at minute 5, once the page caches have filled; writes the figures
/// into the benchmark report.
///
/// With `--edge` the clients are phone apps: every op goes over HTTP through the edge
/// (EDGE.md's routes, one keep-alive connection per client) and each buddy holds the
/// events WebSocket, on which every chat message sent to it must arrive. Then it also
/// passes only with no `5xx` at all and the edge's resident set at the end within
/// 10 % of where it stood after the first minute.
struct Soak: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "soak", abstract: "Mixed ops on all five services for minutes; checks errors and memory.")

    /// A connection's page cache (`cache_size`): SQLite's heap stops there once it is full.
    static let pageCacheBytes: Int64 = 32 * 1024 * 1024

    @Option(help: "Minutes of load.")
    var minutes: Double = 10

    @Option(help: "Concurrent clients, each a user with a buddy.")
    var clients: Int = 4

    @Option(help: "Ops per client at most (the run is bounded in count as well as in time).")
    var maxOps: Int = 5_000_000

    @Option(help: "The report to update (sections between bench markers are replaced).")
    var output: String = "Docs/BENCHMARKS.md"

    @Flag(help: "Through the edge: every op over HTTP, chat delivered over the events WebSocket.")
    var edge = false

    func run() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-soak-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        SpawnedChildren.all.terminateAllOnSignals { try? FileManager.default.removeItem(at: directory) }
        let services = ServiceEndpoints.services
        // The standard write limit (20/s per user) would pace the clients; the soak
        // is about what a service keeps, so it runs flat out.
        let stack = try BenchStack(directory: directory, services: services)
        defer { stack.stop() }
        let edgePort = edge ? try stack.startEdge() : nil

        let seconds = minutes * 60
        let tally = SoakTally()
        let started = Date()
        let deadline = started.addingTimeInterval(seconds)
        var threads: [Thread] = []
        let done = DispatchGroup()
        let endpoints = Dictionary(uniqueKeysWithValues: services.map { ($0, stack.endpoint($0)) })
        for client in 0..<clients {
            done.enter()
            let thread = Thread { [maxOps] in
                defer { done.leave() }
                do {
                    let transport: any SoakTransport = edgePort.map { port in
                        HTTPSoakTransport(port: port) { tally.recordServerError() }
                    } ?? ZeroMQSoakTransport(endpoints: endpoints)
                    try SoakClient(index: client, transport: transport, eventsPort: edgePort, tally: tally)
                        .run(until: deadline, maxOps: maxOps)
                } catch {
                    tally.record(op: "setup", code: "\(error)")
                }
            }
            thread.stackSize = 4 << 20
            threads.append(thread)
            thread.start()
        }

        // Memory after the first minute (or a sixth of a shorter run), then at the end,
        // as each service reports it: its resident set, and SQLite's heap within it.
        let settle = min(60, seconds / 6)
        Thread.sleep(until: started.addingTimeInterval(settle))
        let health = Dictionary(uniqueKeysWithValues: services.map {
            ($0, ServiceClient(service: $0, endpoint: stack.endpoint($0), timeout: 10, tries: 3))
        })
        defer { health.values.forEach { $0.close() } }
        func memory() -> [String: MemoryUse] {
            services.reduce(into: [:]) { result, service in
                result[service] = try? health[service]!.call(HealthAPI.health(service), Empty()).memory
            }
        }
        let early = memory()
        let edgeEarly = stack.residentBytes("edge")
        let opsEarly = tally.totalOps
        var peak = early.mapValues(\.residentBytes)
        var edgePeak = edgeEarly ?? 0
        // From minute 5 (or half a shorter run) on, each service's first sample with its
        // page caches full (SQLite's heap at a connection's cache_size, 32 MiB): the whole
        // process must stay within 10% of it from then to the end.
        let filled = min(300, seconds / 2)
        var full: [String: (seconds: Double, use: MemoryUse)] = [:]
        while Date() < deadline, done.wait(timeout: .now() + 5) == .timedOut {
            let now = memory()
            let elapsed = Date().timeIntervalSince(started)
            edgePeak = max(edgePeak, stack.residentBytes("edge") ?? 0)
            for (service, use) in now {
                peak[service] = max(peak[service] ?? 0, use.residentBytes)
                if full[service] == nil, elapsed >= filled, use.sqliteBytes >= Self.pageCacheBytes { full[service] = (elapsed, use) }
            }
        }
        done.wait()
        let elapsed = Date().timeIntervalSince(started)
        let late = memory()
        let edgeLate = stack.residentBytes("edge")

        var memoryRows = ""
        var memoryOK = late.count == services.count && early.count == services.count
        for service in services {
            guard let before = early[service], let after = late[service] else {
                memoryRows += "| \(service) | – | – | – | – | – | – | – | **no answer** |\n"
                memoryOK = false
                continue
            }
            // Everything but SQLite's page caches, which fill up to their set size as the files grow…
            let otherGrowth = percent(after.residentBytes - after.sqliteBytes, of: before.residentBytes - before.sqliteBytes)
            // …and the whole process once they are full (not judged when they fill only at the end).
            let filledAt = full[service]
            let wholeGrowth = filledAt.map { percent(after.residentBytes, of: $0.use.residentBytes) }
            let ok = otherGrowth <= 10 && (wholeGrowth ?? 0) <= 10
            memoryOK = memoryOK && ok
            let filledCell = filledAt.map { "\(format($0.seconds)) s: \(mib($0.use.residentBytes)) (\(mib($0.use.sqliteBytes)))" }
                ?? "not full before the end"
            memoryRows += "| \(service) | \(mib(before.residentBytes)) (\(mib(before.sqliteBytes))) "
                + "| \(filledCell) | \(mib(peak[service] ?? 0)) "
                + "| \(mib(after.residentBytes)) (\(mib(after.sqliteBytes))) "
                + "| \(format(otherGrowth, 1)) % | \(wholeGrowth.map { format($0, 1) + " %" } ?? "–") "
                + "| \(format(percent(after.residentBytes, of: before.residentBytes), 1)) % | \(ok ? "yes" : "**no**") |\n"
        }
        let unexpected = tally.unexpectedErrors
        var opRows = ""
        for (op, count) in tally.counts.sorted(by: { $0.key < $1.key }) {
            let errors = tally.errors[op].map { $0.map { "\($0.key) × \($0.value)" }.sorted().joined(separator: ", ") } ?? ""
            opRows += "| `\(op)` | \(count) | \(errors.isEmpty ? "0" : errors) |\n"
        }
        let files = services.map { service -> String in
            let size = (try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent("\(service).sqlite").path)[.size] as? Int) ?? 0
            return "\(service) \(mib(size))"
        }.joined(separator: ", ")
        var passed = unexpected == 0 && memoryOK
        var edgeSummary = ""
        if edge {
            let growth = percent(Int64(edgeLate ?? 0), of: Int64(edgeEarly ?? 0))
            let edgeOK = tally.serverErrors == 0 && edgeEarly != nil && edgeLate != nil && growth <= 10
            passed = passed && edgeOK
            edgeSummary = """

            Through the edge: \(tally.serverErrors) `5xx` replies (none allowed); \(tally.delivered) chat messages arrived on
            the buddies' WebSockets, each within 5 s of its send (a missing one counts as an unexpected error of
            `events.chat.message`). The edge's resident set: \(mib(edgeEarly ?? 0)) after \(format(settle)) s, peak \(mib(edgePeak)),
            \(mib(edgeLate ?? 0)) at the end: \(format(growth, 1)) % (within 10 %: \(growth <= 10 ? "yes" : "**no**")).
            """
        }
        let command = "hereabouts-bench soak --minutes \(format(minutes, minutes.rounded() == minutes ? 0 : 1)) --clients \(clients)\(edge ? " --edge" : "")"
        let report = """
        ## Soak\(edge ? " through the edge: the apps' flows over HTTP and WebSocket" : ": mixed ops on all five services")

        \(Machine.measured(with: "`make soak\(edge ? "-edge" : "")` (`\(command)`)")) The five services\(edge ? " and the edge" : "") run as separate processes on loopback TCP,
        write rate limits off\(edge ? " (and the edge's per-address limit). Every op below is the HTTP request of its route (EDGE.md) on one keep-alive connection per client, each POST with an `Idempotency-Key`; each buddy holds `GET /v1/events` open" : ""). Each client is a registered user with a buddy and loops through the apps' flows:
        `auth.me`, `auth.location.set`; create a post with hours, a notify radius and a photo, fetch the photo, edit
        the post, get it, list the user's posts; `geo.search`, `geo.nearest`, `geo.within`, `geo.places.search`,
        `geo.places.reverse`, `geo.fences.update` (and `geo.users.near` every 5 s, within its limit of 30 a
        minute per caller); save the previous post, list, check and unsave
        it; a chat message to the buddy, who lists conversations, reads and marks it read; the buddy rates the post;
        every tenth round a trip with the buddy invited; then the previous post is deleted, so the data stays about
        the same size while the feeds, kept replies and chat history grow.

        **\(passed ? "Passed" : "FAILED")**: \(tally.totalOps) ops in \(format(elapsed)) s (\(format(Double(tally.totalOps) / elapsed)) ops/s; \(opsEarly) in the first \(format(settle)) s),
        \(unexpected) unexpected errors; \(tally.followerWaits) waits for a follower (a save of the post
        created one round earlier, answered `not_found` until favourites had followed catalogue, then retried:
        expected, as the feeds are asynchronous). Database files at the end: \(files).\(edgeSummary)

        Memory as each service's `health` reports it: the resident set, with SQLite's heap (almost all of
        it the connections' page caches, `cache_size` 32 MiB per connection) in brackets. The page caches fill
        as the files grow and stop at their size. The rule, as checked, per service: (1) the resident set less
        SQLite's heap at the end is within 10 % of what it was after \(format(settle)) s; (2) from the first sample at
        \(format(filled)) s or later with the page caches full (SQLite's heap at 32 MiB, a connection's `cache_size`), the
        whole resident set at the end is within 10 % of what it was then (a service whose caches fill only at the
        end is judged by (1) alone). The last change column (the whole set against \(format(settle)) s) is shown, not
        checked: it holds the caches' filling.

        | service | RSS at \(format(settle)) s (SQLite) | caches full at | peak | RSS at the end (SQLite) | (1) without SQLite since \(format(settle)) s | (2) whole since full | whole since \(format(settle)) s | within 10 % |
        |---|---|---|---|---|---|---|---|---|
        \(memoryRows)
        | op | calls | errors |
        |---|---|---|
        \(opRows)
        """
        print(report)
        try BenchmarkReport(path: output).write(section: edge ? "soak-edge" : "soak", body: report)
        if !passed { throw ExitCode(1) }
    }

    private func mib(_ bytes: some BinaryInteger) -> String { "\(format(Double(bytes) / 1_048_576, 1)) MiB" }

    private func percent(_ value: Int64, of base: Int64) -> Double {
        base > 0 ? Double(value - base) / Double(base) * 100 : .nan
    }
}

/// Counts of ops and errors across the clients.
final class SoakTally: Sendable {
    private struct State {
        var counts: [String: Int] = [:]
        var errors: [String: [String: Int]] = [:]
        var followerWaits = 0
        var serverErrors = 0
        var delivered = 0
    }
    private let state = Mutex(State())

    func record(op: String, code: String? = nil) {
        state.withLock { state in
            state.counts[op, default: 0] += 1
            if let code { state.errors[op, default: [:]][code, default: 0] += 1 }
        }
    }

    func recordFollowerWait() { state.withLock { $0.followerWaits += 1 } }

    /// A `5xx` from the edge (also counted as its op's error).
    func recordServerError() { state.withLock { $0.serverErrors += 1 } }

    /// A chat message that arrived on the recipient's WebSocket.
    func recordDelivery() { state.withLock { $0.delivered += 1 } }

    var serverErrors: Int { state.withLock { $0.serverErrors } }
    var delivered: Int { state.withLock { $0.delivered } }

    var counts: [String: Int] { state.withLock { $0.counts } }
    var errors: [String: [String: Int]] { state.withLock { $0.errors } }
    var followerWaits: Int { state.withLock { $0.followerWaits } }
    var totalOps: Int { state.withLock { $0.counts.values.reduce(0, +) } }
    var unexpectedErrors: Int { state.withLock { $0.errors.values.flatMap(\.values).reduce(0, +) } }
}

/// One user and a buddy working through the apps' flows on their own connections.
private final class SoakClient {
    let index: Int
    let tally: SoakTally
    private let transport: any SoakTransport
    /// The edge's port, when the buddy is to hold the events WebSocket.
    private let eventsPort: Int?
    /// Ops this client has sent.
    private var ops = 0

    private static let places: [(name: String, lat: Double, lon: Double, zone: String)] = [
        ("Marseille", 43.2965, 5.3698, "Europe/Paris"), ("Lisbon", 38.7223, -9.1393, "Europe/Lisbon"),
        ("Cairns", -16.9186, 145.7781, "Australia/Brisbane"), ("Kyoto", 35.0116, 135.7681, "Asia/Tokyo"),
        ("Oaxaca", 17.0732, -96.7266, "America/Mexico_City"), ("Reykjavik", 64.1466, -21.9426, "Atlantic/Reykjavik"),
    ]

    init(index: Int, transport: any SoakTransport, eventsPort: Int?, tally: SoakTally) {
        self.index = index
        self.tally = tally
        self.transport = transport
        self.eventsPort = eventsPort
    }

    func run(until deadline: Date, maxOps: Int) throws {
        defer { transport.close() }
        let password = "soak password \(index)"
        var user = try session(register: "soak\(index)@example.org", password: password)
        var buddy = try session(register: "buddy\(index)@example.org", password: password)
        let userId = try user.reply.object("user").string("id"), buddyId = try buddy.reply.object("user").string("id")
        let events = try eventsPort.map { port in
            let socket = try EventSocketClient(port: port)
            socket.authenticate(buddy.token)
            guard socket.next(ofType: "ready") != nil else { throw ServiceError(code: .unavailable, message: "the events socket did not get ready") }
            return socket
        }
        defer { events?.close() }
        var previousPost: String?
        var conversation: String?
        var round = 0
        var nextUsersNear = Date()
        while Date() < deadline, ops < maxOps {
            // Access tokens last 15 minutes: renew them well before.
            if Date().timeIntervalSince(user.issued) > 600 {
                user = try refresh(user)
                buddy = try refresh(buddy)
                events?.authenticate(buddy.token)
            }
            let place = Self.places[(index + round) % Self.places.count]
            let lat = place.lat + Double(round % 50) * 0.0004, lon = place.lon - Double(round % 30) * 0.0004
            let token = user.token

            call("auth", "auth.me", [:], token)
            call("auth", "auth.location.set", ["lat": .number(.double(lat)), "lon": .number(.double(lon)), "discoverable": .bool(true)], buddy.token)
            guard let created = call("catalogue", "catalogue.posts.create", [
                "kind": .string("offer"), "title": .string("Soak offer \(index)-\(round)"),
                "text": .string("Fresh every morning, round \(round)"), "lat": .number(.double(lat)), "lon": .number(.double(lon)),
                "tags": .array([.string("soak"), .string("client\(index)")]), "hours": .string("Mo-Su 08:00-20:00"),
                "timezone": .string(place.zone), "notifyRadius": .number(.integer(300)),
            ], token), let post = try? created.object("post").string("id") else { break }
            if let image = call("catalogue", "catalogue.images.add", ["postId": .string(post)], token,
                                attachments: [TestImages.png(width: 4, height: 3)]),
               let imageId = try? image.object("image").string("id") {
                call("catalogue", "catalogue.images.get", ["id": .string(imageId)], nil)
            }
            call("catalogue", "catalogue.posts.update", ["id": .string(post), "title": .string("Soak offer \(index)-\(round), edited")], token)
            call("catalogue", "catalogue.posts.get", ["id": .string(post)], nil)
            call("catalogue", "catalogue.posts.list", ["owner": .string(userId), "limit": .number(.integer(10))], nil)

            let point: [String: JSONValue] = ["lat": .number(.double(lat)), "lon": .number(.double(lon))]
            call("geo", "geo.search", point.merging(["radius": .number(.integer(5000)), "q": .string("soak")]) { $1 }, nil)
            call("geo", "geo.nearest", point.merging(["k": .number(.integer(10))]) { $1 }, nil)
            call("geo", "geo.within", ["minLat": .number(.double(lat - 0.05)), "minLon": .number(.double(lon - 0.05)),
                                       "maxLat": .number(.double(lat + 0.05)), "maxLon": .number(.double(lon + 0.05))], nil)
            call("geo", "geo.places.search", ["q": .string(String(place.name.prefix(4 + round % 3)))], nil)
            call("geo", "geo.places.reverse", point, nil)
            // Divers near a place, as often as a person asks: every 5 s (the op allows 30 a minute per caller).
            if Date() >= nextUsersNear {
                call("geo", "geo.users.near", point.merging(["radius": .number(.integer(20000))]) { $1 }, token)
                nextUsersNear = Date().addingTimeInterval(5)
            }
            call("geo", "geo.fences.update", point, buddy.token)

            if let previousPost {
                saveFollowed(previousPost, token: token)
                call("favourites", "favourites.list", ["limit": .number(.integer(20))], token)
                call("favourites", "favourites.contains", ["postIds": .array([.string(previousPost), .string(post)])], token)
                call("favourites", "favourites.remove", ["postId": .string(previousPost)], token)
            }

            if let sent = call("chat", "chat.send", ["to": .string(buddyId), "text": .string("Meet at the reef at \(round % 12 + 7)?")], token),
               let message = try? sent.object("message") {
                conversation = try? message.string("conversationId")
                if let events { awaitDelivery(of: message, on: events) }
                if let conversation, case .number(let seq)? = message["seq"] {
                    call("chat", "chat.conversations", ["limit": .number(.integer(10))], buddy.token)
                    call("chat", "chat.messages", ["conversationId": .string(conversation), "limit": .number(.integer(20))], buddy.token)
                    call("chat", "chat.read", ["conversationId": .string(conversation), "seq": .number(seq)], buddy.token)
                }
            }
            call("catalogue", "catalogue.ratings.set", ["postId": .string(post), "stars": .number(.integer(Int64(1 + round % 5)))], buddy.token)

            if round % 10 == 0, let trip = call("catalogue", "catalogue.trips.create", [
                "title": .string("Trip \(round)"), "city": .string(place.name), "countryCode": .string("PT"),
            ], token), let tripId = try? trip.object("trip").string("id") {
                call("catalogue", "catalogue.trips.invite", ["id": .string(tripId), "userId": .string(buddyId)], token)
                call("catalogue", "catalogue.trips.get", ["id": .string(tripId)], buddy.token)
                call("catalogue", "catalogue.trips.delete", ["id": .string(tripId)], token)
            }
            if let previousPost {
                call("catalogue", "catalogue.posts.delete", ["id": .string(previousPost)], token)
            }
            previousPost = post
            round += 1
        }
        _ = conversation
    }

    /// The chat message just sent, as the buddy's WebSocket gets it: within 5 s, or an
    /// unexpected error of `events.chat.message`. Other events (fence crossings) are passed over.
    private func awaitDelivery(of message: JSONObject, on events: EventSocketClient) {
        let id = message["id"]?.stringValue
        let deadline = Date().addingTimeInterval(5)
        while case let left = deadline.timeIntervalSinceNow, left > 0 {
            guard let event = events.next(ofType: "chat.message", timeout: left) else { break }
            if event["message"]?["id"]?.stringValue == id {
                tally.recordDelivery()
                tally.record(op: "events.chat.message")
                return
            }
        }
        tally.record(op: "events.chat.message", code: events.hasEnded ? "socket closed" : "not delivered within 5 s")
    }

    /// Saves a post created a round ago. Favourites learns of posts from
    /// catalogue's feed, a moment after they are created: `not_found` until then.
    private func saveFollowed(_ post: String, token: String) {
        for _ in 0..<100 {
            switch attempt("favourites", "favourites.add", ["postId": .string(post)], token) {
            case .failure(let error) where error.code == .notFound:
                tally.recordFollowerWait()
                Thread.sleep(forTimeInterval: 0.02)
            case .failure(let error):
                tally.record(op: "favourites.add", code: error.code.rawValue)
                return
            case .success:
                tally.record(op: "favourites.add")
                return
            }
        }
        tally.record(op: "favourites.add", code: "not_found for 2 s")
    }

    private struct Session {
        var token: String
        var refreshToken: String
        var reply: JSONObject
        var issued = Date()
    }

    private func session(register email: String, password: String) throws -> Session {
        let reply = try attempt("auth", "auth.register", ["email": .string(email), "password": .string(password)], nil).get()
        return Session(token: try reply.string("accessToken"), refreshToken: try reply.string("refreshToken"), reply: reply)
    }

    private func refresh(_ session: Session) throws -> Session {
        let reply = try attempt("auth", "auth.refresh", ["refreshToken": .string(session.refreshToken)], nil).get()
        tally.record(op: "auth.refresh")
        return Session(token: try reply.string("accessToken"), refreshToken: try reply.string("refreshToken"), reply: session.reply)
    }

    /// Calls an op and counts it; any failure is an unexpected error.
    @discardableResult
    private func call(_ service: String, _ op: String, _ body: [String: JSONValue], _ token: String?,
                      attachments: [Data] = []) -> JSONObject? {
        switch attempt(service, op, body, token, attachments: attachments) {
        case .success(let reply):
            tally.record(op: op)
            return reply
        case .failure(let error):
            tally.record(op: op, code: error.code.rawValue)
            if ProcessInfo.processInfo.environment["HEREABOUTS_SOAK_TRACE"] != nil { print("\(op): \(error)") }
            return nil
        }
    }

    private func attempt(_ service: String, _ op: String, _ body: [String: JSONValue], _ token: String?,
                         attachments: [Data] = []) -> Result<JSONObject, ServiceError> {
        ops += 1
        let object = JSONObject(body.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        return transport.call(service, op, object, token: token, attachments: attachments)
    }
}

private extension JSONObject {
    func string(_ key: String) throws -> String {
        guard case .string(let value)? = self[key] else { throw ServiceError(code: .internal, message: "no \(key) in the reply") }
        return value
    }

    func object(_ key: String) throws -> JSONObject {
        guard case .object(let value)? = self[key] else { throw ServiceError(code: .internal, message: "no \(key) in the reply") }
        return value
    }
}
