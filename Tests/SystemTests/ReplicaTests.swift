import Contracts
import EdgeFixtures
import Foundation
import ServiceKit
import ServiceClient
import ServiceKitTesting
import Synchronization
import TestThreads
import Testing
import Wire
#if canImport(Glibc)
import Glibc
#endif

/// Geo run as two replicas under `here up --geo-replicas 2`, searched through the
/// edge while one and then the other is killed.
@Suite("Geo replicas", .ownThread)
struct ReplicaTests {
    /// The posts made, with where they are, to search by brute force.
    struct Placed: Sendable {
        var id: String
        var word: String
        var lat: Double
        var lon: Double
    }

    static let words = ["kettle", "lamp", "chair"]
    static let center = (lat: 52.09, lon: 5.12)

    @Test("two geo replicas under a search load, one hung and each killed in turn: no search fails, every answer is what brute force finds, a killed one comes back and takes traffic, and live queries move off a replica that stops answering")
    func killEachReplica() throws {
        let geoEndpoints = [try ChildProcess.freeEndpoint(), try ChildProcess.freeEndpoint()]
        let geoEvents = [try ChildProcess.freeEndpoint(), try ChildProcess.freeEndpoint()]
        let stack = try EdgeStack("replicas", environment: [
            "HEREABOUTS_GEO_ENDPOINT": geoEndpoints.joined(separator: ","),
            "HEREABOUTS_GEO_EVENTS": geoEvents.joined(separator: ","),
            // A search at a replica that was just killed waits this long before the other is tried.
            "HEREABOUTS_EDGE_SERVICE_TIMEOUT": "10",
            // Watches are looked after every 2 s: one on a killed replica moves soon.
            "HEREABOUTS_EDGE_WATCH_RENEW": "2",
        ], arguments: ["--geo-replicas", "2"])
        defer { stack.stop() }
        let seller = try stack.register("seller@example.org")
        let sellerClient = stack.client.signed(seller.accessToken)

        // Two live queries: opened in turn, one on each replica.
        let sockets = try (0..<2).map { _ in try EventSocketClient(port: stack.port) }
        defer { sockets.forEach { $0.close() } }
        for socket in sockets {
            socket.authenticate(seller.accessToken)
            _ = socket.send(#"{"type":"watch","id":"teapots","search":{"lat":52.09,"lon":5.12,"radius":5000,"q":"teapot"}}"#)
            #expect(socket.next(ofType: "watch.opened") != nil)
        }

        var placed: [Placed] = []
        var generator = SystemRandomNumberGenerator()
        for number in 0..<45 {
            let word = Self.words[number % Self.words.count]
            let lat = Self.center.lat + Double.random(in: -0.03...0.03, using: &generator)
            let lon = Self.center.lon + Double.random(in: -0.05...0.05, using: &generator)
            let reply = try sellerClient.post("/v1/posts", ["kind": "offer", "title": .string("Old \(word) \(number)"),
                                                            "lat": .number(.double(lat)), "lon": .number(.double(lon))])
            #expect(reply.status == 201, "\(reply)")
            placed.append(Placed(id: try reply.decode(PostReply.self).post.id, word: word, lat: lat, lon: lon))
        }
        // Both replicas hold every post before the load starts.
        try waitUntil("both replicas hold the 45 posts") {
            try geoEndpoints.allSatisfy { endpoint in
                let stats = try here(["call", "geo.stats"], environment: stack.environment.merging(["HEREABOUTS_GEO_ENDPOINT": endpoint]) { $1 })
                guard case .number(let posts)? = (try? JSONParser.parse(Data(stats.out.utf8)))?.objectValue?["posts"] else { return false }
                return posts.doubleValue == Double(placed.count)
            }
        }
        // The two watches are on different replicas.
        for endpoint in geoEndpoints {
            let stats = try here(["call", "geo.stats"], environment: stack.environment.merging(["HEREABOUTS_GEO_ENDPOINT": endpoint]) { $1 })
            guard case .number(let watches)? = (try? JSONParser.parse(Data(stats.out.utf8)))?.objectValue?["watches"] else {
                Issue.record("geo.stats at \(endpoint): \(stats)")
                continue
            }
            #expect(watches.doubleValue == 1, "watches at \(endpoint)")
        }
        // A post both watches see: each replica publishes its own watch's events.
        func teapotSeenByBoth(_ title: String) throws {
            let teapot = try sellerClient.post("/v1/posts", ["kind": "offer", "title": .string(title), "lat": 52.09, "lon": 5.12])
            #expect(teapot.status == 201)
            for (index, socket) in sockets.enumerated() {
                #expect(Self.sees(title, on: socket), "socket \(index) did not see \(title)")
            }
        }
        try teapotSeenByBoth("Teapot")

        // The load: searches through the edge, each checked against brute force.
        struct Tally: Sendable { var searches = 0; var failures: [String] = [] }
        let tally = Mutex(Tally())
        let stop = Atomic<Bool>(false)
        let client = stack.client
        let posts = placed
        let load = Thread {
            var generator = SystemRandomNumberGenerator()
            while !stop.load(ordering: .relaxed) {
                let word = Self.words.randomElement(using: &generator)!
                let lat = Self.center.lat + Double.random(in: -0.02...0.02, using: &generator)
                let lon = Self.center.lon + Double.random(in: -0.03...0.03, using: &generator)
                let radius = Double(Int.random(in: 500...4000, using: &generator))
                let failure: String?
                do {
                    let reply = try client.get("/v1/search?lat=\(lat)&lon=\(lon)&radius=\(Int(radius))&q=\(word)&limit=100")
                    if reply.status != 200 {
                        failure = "status \(reply.status): \(reply)"
                    } else {
                        let hits = try reply.object()["hits"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } ?? []
                        let expected = Self.bruteForce(posts, word: word, lat: lat, lon: lon, radius: radius)
                        failure = Set(hits) == expected.certain.union(Set(hits).intersection(expected.onEdge)) && hits.count == Set(hits).count
                            ? nil : "\(word) at \(lat),\(lon) r \(radius): \(hits.count) hits, brute force \(expected.certain.count)"
                    }
                } catch {
                    failure = "\(error)"
                }
                tally.withLock { tally in
                    tally.searches += 1
                    if let failure { tally.failures.append(failure) }
                }
                // A steady load, not a flood: the other system tests share these cores.
                Thread.sleep(forTimeInterval: 0.005)
            }
        }
        load.start()
        defer {
            stop.store(true, ordering: .relaxed)
            while !load.isFinished { Thread.sleep(forTimeInterval: 0.05) }
        }
        func searched(atLeast more: Int, _ what: String) throws {
            let target = tally.withLock { $0.searches } + more
            try waitUntil(what) { tally.withLock { $0.searches } >= target }
        }
        try searched(atLeast: 50, "searches on both replicas")
        func ready(_ name: String) throws -> Bool {
            let status = try here(["status", "--json"], environment: stack.environment)
            let rows = (try? JSONParser.parse(Data(status.out.utf8)))?.arrayValue ?? []
            return rows.contains { (row: JSONValue) in
                guard let row = row.objectValue, case .bool(true)? = row["ready"]?.objectValue?["ready"] else { return false }
                return row["service"]?.stringValue == name
            }
        }

        // A replica that hangs (SIGSTOP: it neither answers nor exits, so nothing restarts
        // it): the edge's probe leaves it out, searches go on, and its watch moves.
        let hanging = try #require(Self.pid(of: "geo-1", in: stack.up.logText))
        #expect(FreezeTests.stop(hanging))
        try teapotSeenByBoth("Teapot while geo-1 hangs")
        try searched(atLeast: 100, "searches while geo-1 hangs")
        kill(hanging, SIGCONT)
        try waitUntil("geo-1 answering again") { try ready("geo-1") }

        for victim in ["geo-1", "geo"] {
            let pid = try #require(Self.pid(of: victim, in: stack.up.logText), "\(victim)'s pid in: \(stack.up.logText)")
            kill(pid, SIGKILL)
            // The watch it held moves to the other replica: a new teapot reaches both sockets.
            try teapotSeenByBoth("Teapot after \(victim) went")
            // The other answers alone while the victim is down …
            try searched(atLeast: 100, "searches while \(victim) is down")
            // … which here up starts again: it catches up, and is ready.
            try waitUntil("\(victim) restarted and ready") {
                try stack.up.logText.contains("\(victim) restarted") && ready(victim)
            }
            try searched(atLeast: 50, "searches after \(victim) came back")
        }
        // Killing geo (replica 0) last left only the restarted geo-1 to answer: it took traffic again.
        let final = tally.withLock { $0 }
        #expect(final.failures.isEmpty, "\(final.failures.count) of \(final.searches) searches failed: \(final.failures.prefix(5))")
        #expect(final.searches >= 450)
    }

    @Test("a replica that falls behind (its link to catalogue cut, more than 1,000 changes short) gets no searches and loses its live queries; caught up again, it serves")
    func laggingReplica() throws {
        let geoEndpoints = [try ChildProcess.freeEndpoint(), try ChildProcess.freeEndpoint()]
        let geoEvents = [try ChildProcess.freeEndpoint(), try ChildProcess.freeEndpoint()]
        // here up runs replica 0; this test runs geo-1 itself, reaching catalogue through a proxy it can cut.
        let stack = try EdgeStack("lagging", environment: [
            "HEREABOUTS_GEO_ENDPOINT": geoEndpoints.joined(separator: ","), "HEREABOUTS_GEO_EVENTS": geoEvents.joined(separator: ","),
            "HEREABOUTS_EDGE_SERVICE_TIMEOUT": "10", "HEREABOUTS_EDGE_WATCH_RENEW": "2",
        ])
        defer { stack.stop() }
        let catalogue = try #require(stack.environment[ServiceEndpoints.requestsVariable("catalogue")])
        let proxy = try TCPProxy(upstream: try #require(Int(catalogue.split(separator: ":").last ?? "")))
        var geoOneEnvironment = stack.environment
        geoOneEnvironment["HEREABOUTS_REPLICA"] = "1"
        geoOneEnvironment[KeyRing.environmentVariable] = stack.directory.appendingPathComponent("data/keys").path
        geoOneEnvironment[ServiceEndpoints.requestsVariable("catalogue")] = "tcp://127.0.0.1:\(proxy.port)"
        let geoOne = try ChildProcess("geo-service", arguments: [], environment: geoOneEnvironment,
                                      log: stack.directory.appendingPathComponent("geo-1.log"))
        defer { geoOne.terminate() }
        func readiness(_ replica: Int) throws -> ReadyReply? {
            let reply = try here(["call", "geo.ready"], environment: stack.environment.merging(["HEREABOUTS_GEO_ENDPOINT": geoEndpoints[replica]]) { $1 })
            return try? JSONValueDecoder().decode(ReadyReply.self, from: Data(reply.out.utf8))
        }
        try waitUntil("geo-1 ready") { try readiness(1)?.ready == true }

        // Live queries on both replicas (opened round the ready ones).
        let seller = try stack.register("seller@example.org")
        let sellerClient = stack.client.signed(seller.accessToken)
        var sockets: [EventSocketClient] = []
        defer { sockets.forEach { $0.close() } }
        func watches(_ replica: Int) throws -> Double {
            let stats = try here(["call", "geo.stats"], environment: stack.environment.merging(["HEREABOUTS_GEO_ENDPOINT": geoEndpoints[replica]]) { $1 })
            return (try? JSONParser.parse(Data(stats.out.utf8)))?.objectValue?["watches"]?.doubleValue ?? 0
        }
        while try watches(1) == 0, sockets.count < 8 {
            let socket = try EventSocketClient(port: stack.port)
            socket.authenticate(seller.accessToken)
            _ = socket.send(#"{"type":"watch","id":"crates","search":{"lat":52.09,"lon":5.12,"radius":5000,"q":"crate"}}"#)
            #expect(socket.next(ofType: "watch.opened") != nil)
            sockets.append(socket)
        }
        try #require(try watches(1) >= 1, "no watch was opened on geo-1")

        // The link is cut; catalogue takes 1,200 barrels, announced to geo-1 on its events but never fetched.
        proxy.cut()
        for batch in 0..<2 {
            let posts: [JSONValue] = (0..<600).map { number in
                .object(["ref": .string("barrel-\(batch)-\(number)"), "kind": "offer", "title": .string("Barrel \(batch * 600 + number)"),
                         "lat": .number(.double(52.09 + Double(number % 30) * 0.0005)), "lon": 5.12])
            }
            #expect(try sellerClient.post("/v1/posts/import", ["posts": .array(posts)]).status == 200)
        }
        try waitUntil("geo-1 more than maxLag behind") {
            guard let ready = try readiness(1), let feed = ready.feeds.first(where: { $0.feed == "catalogue" }) else { return false }
            return feed.lag > FeedReadiness.maxLag && !ready.ready
        }
        // Replica 0 has them all; the edge's probe (every second) leaves geo-1 out. Once a
        // search has come back whole, every one does: none goes to geo-1, which has none.
        func wholePage() throws -> Bool {
            let page = try stack.client.get("/v1/search?lat=52.09&lon=5.12&radius=5000&q=barrel&limit=50").object()
            return page["hits"]?.arrayValue?.count == 50
        }
        try waitUntil("replica 0 holding the barrels, and geo-1 left out") { try wholePage() && wholePage() && wholePage() }
        for attempt in 0..<30 { #expect(try wholePage(), "search \(attempt) went to the lagging replica") }
        // The live query on geo-1 moves: a new crate reaches every socket.
        #expect(try sellerClient.post("/v1/posts", ["kind": "offer", "title": "Crate behind", "lat": 52.09, "lon": 5.12]).status == 201)
        for (index, socket) in sockets.enumerated() {
            #expect(Self.sees("Crate behind", on: socket), "socket \(index) did not see the crate")
        }

        // Mended, geo-1 fetches what it missed, is ready again, and its answers are whole.
        proxy.mend()
        try waitUntil("geo-1 caught up and ready") { try readiness(1)?.ready == true }
        for attempt in 0..<20 { #expect(try wholePage(), "search \(attempt) after geo-1 caught up") }
    }

    /// Whether the socket's watch shows `title` within 40 s: as `watch.entered`, or in
    /// the page of a `watch.opened` (the watch was opened again on another replica).
    static func sees(_ title: String, on socket: EventSocketClient) -> Bool {
        let deadline = Date().addingTimeInterval(40)
        while case let left = deadline.timeIntervalSinceNow, left > 0 {
            guard let message = socket.next(timeout: left) else { return false }
            switch message["type"]?.stringValue {
            case "watch.entered":
                if message["hit"]?.objectValue?["title"]?.stringValue == title { return true }
            case "watch.opened":
                if message["hits"]?.arrayValue?.contains(where: { $0.objectValue?["title"]?.stringValue == title }) == true { return true }
            default:
                break
            }
        }
        return false
    }

    /// The posts with `word` within `radius` of the point: `certain` well inside,
    /// `onEdge` within a metre of the circle (either answer is right for those).
    static func bruteForce(_ placed: [Placed], word: String, lat: Double, lon: Double,
                           radius: Double) -> (certain: Set<String>, onEdge: Set<String>) {
        var certain = Set<String>(), onEdge = Set<String>()
        for post in placed where post.word == word {
            let distance = Self.haversine(lat, lon, post.lat, post.lon)
            if distance <= radius - 1 { certain.insert(post.id) } else if distance <= radius + 1 { onEdge.insert(post.id) }
        }
        return (certain, onEdge)
    }

    static func haversine(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let rad = Double.pi / 180
        let dLat = (lat2 - lat1) * rad, dLon = (lon2 - lon1) * rad
        let a = sin(dLat / 2) * sin(dLat / 2) + cos(lat1 * rad) * cos(lat2 * rad) * sin(dLon / 2) * sin(dLon / 2)
        return 2 * GeoRules.earthRadius * asin(min(1, sqrt(a)))
    }

    /// The pid `here up` reported when it started `name` (`geo-1   tcp://…  ready  v…  pid N`).
    static func pid(of name: String, in log: String) -> pid_t? {
        for line in log.split(separator: "\n") where line.split(separator: " ").first.map(String.init) == name {
            if let range = line.range(of: " pid "), let pid = pid_t(line[range.upperBound...].prefix { $0.isNumber }) { return pid }
        }
        return nil
    }

    func waitUntil(_ what: String, within seconds: TimeInterval = 120, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while try !condition() {
            guard Date() < deadline else {
                Issue.record("waited \(Int(seconds)) s for \(what)")
                throw CancellationError()
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
    }
}
