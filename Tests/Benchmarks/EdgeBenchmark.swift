import Contracts
import EdgeFixtures
import Foundation
import ServiceClient
import ServiceKitTesting
import Synchronization
import Wire

/// The edge issue's figures: `GET /v1/search` through the edge against `geo.search`
/// direct, alternating in one run, with nginx serving a static file of the same size
/// as the HTTP floor; then many authenticated WebSockets held by one edge, with chat
/// messages sent at a steady rate delivered to them.
struct EdgeBenchmark {
    var seconds: Double
    var directory: URL
    var dataset: URL?
    var sockets: Int
    var report: BenchmarkReport

    func run() throws -> String {
        let fileLimit = SocketSwarm.raiseFileLimit()
        let stack = try BenchStack(directory: directory, services: ["auth", "catalogue", "geo", "chat"])
        defer { stack.stop() }
        // The load comes from this machine's one address.
        let port = try stack.startEdge(environment: ["HEREABOUTS_EDGE_MAX_SOCKETS": "\(max(20_000, sockets + 100))",
                                                     "HEREABOUTS_EDGE_MAX_SOCKETS_PER_ADDRESS": "\(max(20_000, sockets + 100))"])
        let searchSection = try dataset.map { try search(stack: stack, port: port, dataset: $0) }
            ?? "### Search through the edge\n\nSkipped: needs `--dataset` (make bench makes it)."
        let socketSection = try manySockets(stack: stack, port: port, fileLimit: fileLimit)
        return """
        ## Edge: HTTP and WebSocket in front of the services

        \(Machine.measured(with: "`make bench`"))
        The services and `edge-service` run as separate processes on loopback, rate limits off; the load
        generators run on the same two cores.

        \(searchSection)

        \(socketSection)
        """
    }

    // MARK: Search

    private func search(stack: BenchStack, port: Int, dataset: URL) throws -> String {
        let posts = try DatasetPost.load(dataset)
        let queries = try DatasetQuery.load(dataset)
        let token = try stack.register("edge-bench@example.org").accessToken
        print("edge: importing \(posts.count) posts through catalogue")
        let (imported, _) = try DatasetImport.runUntilSearchable(posts, token: token, catalogue: stack.endpoint("catalogue"),
                                                                 geo: stack.endpoint("geo"))

        // The same queries both ways: as the query of GET /v1/search, and as geo.search frames.
        let paths = queries.map(\.searchPath)
        let frames = queries.map(\.searchFrame)
        let script = try Wrk.script(paths: paths, in: directory, name: "search")
        let url = "http://127.0.0.1:\(port)"
        let sample = try EdgeClient(port: port).get(paths[0])
        guard sample.status == 200 else { throw PeerError("the edge answered \(sample)") }
        let nginx = try NginxPeer(directory: directory, file: sample.body, name: "reply.json")
        defer { nginx.stop() }
        let nginxScript = try Wrk.script(paths: ["/reply.json"], in: directory, name: "static")
        let edgePid = stack.pid("edge")!
        let duration = Int(seconds.rounded())

        print("edge: warming up")
        _ = try Wrk.run(url: url, script: script, seconds: 2)
        var rows = ""
        var edgeRates: [Double] = [], directRates: [Double] = [], ratios: [Double] = [], p99s: [Double] = [], cpu: [Double] = []
        var nginxRates: [Double] = []
        print("edge: measuring search")
        for round in 1...3 {
            let pair = try Self.edgeThenDirect(url: url, script: script, edgePid: edgePid, duration: duration, seconds: seconds,
                                               endpoint: stack.endpoint("geo"), frames: frames)
            let floor = try Wrk.run(url: "http://127.0.0.1:\(nginx.port)", script: nginxScript, seconds: duration)
            edgeRates.append(pair.edge.rate)
            directRates.append(pair.direct.rate)
            ratios.append(pair.edge.rate / pair.direct.rate)
            p99s.append(pair.edge.p99)
            cpu.append(pair.cpuPerRequest)
            nginxRates.append(floor.rate)
            rows += pair.rows(round: round, edge: "`GET /v1/search` through the edge (wrk)", direct: "`geo.search` direct (ZeroMQ)")
            rows += "| \(round) | nginx, the same bytes as a static file (wrk) | \(format(floor.rate)) | \(format(floor.p50, 2)) | \(format(floor.p99, 2)) | \(floor.errors) | |\n"
        }
        let postRows = try postReads(ids: imported.ids, stack: stack, url: url, edgePid: edgePid, duration: duration)
        let ratio = Statistics.median(ratios), p99 = Statistics.median(p99s)
        let log = try report.record("edge-search", columns: ["edge q/s", "direct q/s", "edge ÷ direct", "edge p99 ms", "edge CPU µs/req",
                                                             "nginx q/s"],
                                    values: [Statistics.median(edgeRates), Statistics.median(directRates), ratio, p99,
                                             Statistics.median(cpu), Statistics.median(nginxRates)], digits: 2)
        func verdict(_ met: Bool) -> String { met ? "met" : "not met" }
        return """
        ### Search through the edge

        The \(posts.count) posts and \(queries.count) queries of `../shared/bench/gen_dataset.py`, imported through catalogue.
        Each round, one after another for \(duration) s each: \(Wrk.version) with 2 threads and 4 keep-alive connections
        asking `GET /v1/search?lat=…&lon=…&radius=…&limit=20[&q=…]` of the edge, cycling through the queries (a Lua
        script with every request written once at the start; an answer of 400 or over counts as an error); then 4 closed-loop ZeroMQ clients sending the same queries to
        `geo.search` direct; then wrk on \(NginxPeer.version) (one process, `access_log off`) serving one reply of the
        edge (\(sample.body.count) bytes) as a static file. CPU per request is the edge process's user and system time
        over its requests in the round, from `/proc`.

        | round | what | requests/s | p50 ms | p99 ms | errors | edge CPU per request |
        |---|---|---|---|---|---|---|
        \(rows)
        | target | this run (median of its rounds) | every run of this build |
        |---|---|---|
        | through the edge ≥ 50 % of `geo.search` direct | \(format(ratio * 100)) % (\(format(Statistics.median(edgeRates))) vs \(format(Statistics.median(directRates))) q/s) | \(log.headline(2, digits: 2)): \(verdict(log.median(2) >= 0.5)) |
        | p99 through the edge ≤ 3 ms | \(format(p99, 2)) ms | \(log.headline(3, unit: " ms")): \(verdict(log.median(3) <= 3)) |
        | the edge's CPU per request | \(format(Statistics.median(cpu), 1)) µs | \(log.headline(4, unit: " µs", digits: 1)) |
        | (the HTTP floor: nginx, the same bytes) | \(format(Statistics.median(nginxRates))) requests/s | |

        \(postRows)
        """
    }

    /// One round of a comparison: wrk through the edge (with the edge's CPU per
    /// request, from `/proc`), then 4 closed-loop ZeroMQ clients sending the same
    /// requests (`frames`, in turn) to the service direct.
    private struct RoundPair {
        var edge: Wrk.Result
        var cpuPerRequest: Double
        var direct: LoadResult

        func rows(round: Int, edge edgeName: String, direct directName: String) -> String {
            "| \(round) | \(edgeName) | \(format(edge.rate)) | \(format(edge.p50, 2)) | \(format(edge.p99, 2)) | \(edge.errors) | \(format(cpuPerRequest, 1)) µs |\n"
                + "| \(round) | \(directName) | \(format(direct.rate)) | \(format(direct.percentile(0.5), 2)) | \(format(direct.percentile(0.99), 2)) | \(direct.errors) | |\n"
        }
    }

    private static func edgeThenDirect(url: String, script: URL, edgePid: Int32, duration: Int, seconds: Double,
                                       endpoint: String, frames: [Data]) throws -> RoundPair {
        let cpuBefore = ProcessCPU.seconds(edgePid) ?? 0
        let edge = try Wrk.run(url: url, script: script, seconds: duration)
        let cpuPerRequest = ((ProcessCPU.seconds(edgePid) ?? 0) - cpuBefore) / Double(max(1, edge.requests)) * 1_000_000
        let count = frames.count
        let okPrefix = Data(#""ok":true"#.utf8)
        let direct = LoadGenerator.run(endpoint: endpoint, clients: 4, seconds: seconds,
                                       request: { client, sequence in [frames[(client * count / 4 + sequence) % count]] },
                                       check: { $0.range(of: okPrefix) != nil })
        return RoundPair(edge: edge, cpuPerRequest: cpuPerRequest, direct: direct)
    }

    /// `GET /v1/posts/{id}` through the edge against `catalogue.posts.get` direct, in
    /// alternating rounds, over 10,000 of the imported posts.
    private func postReads(ids: [String], stack: BenchStack, url: String, edgePid: Int32, duration: Int) throws -> String {
        let sample = stride(from: 0, to: ids.count, by: max(1, ids.count / 10_000)).map { ids[$0] }
        guard !sample.isEmpty else { return "" }
        let script = try Wrk.script(paths: sample.map { "/v1/posts/\($0)" }, in: directory, name: "posts")
        let frames = sample.map {
            RequestEnvelope.encode(id: "p", op: CatalogueAPI.get.name, token: nil, body: .object(JSONObject([("id", .string($0))])))
        }
        print("edge: measuring post reads")
        _ = try Wrk.run(url: url, script: script, seconds: 2)
        var rows = ""
        var edgeRates: [Double] = [], directRates: [Double] = [], ratios: [Double] = [], cpu: [Double] = []
        for round in 1...3 {
            let pair = try Self.edgeThenDirect(url: url, script: script, edgePid: edgePid, duration: duration, seconds: seconds,
                                               endpoint: stack.endpoint("catalogue"), frames: frames)
            edgeRates.append(pair.edge.rate)
            directRates.append(pair.direct.rate)
            ratios.append(pair.edge.rate / pair.direct.rate)
            cpu.append(pair.cpuPerRequest)
            rows += pair.rows(round: round, edge: "`GET /v1/posts/{id}` through the edge (wrk)", direct: "`catalogue.posts.get` direct (ZeroMQ)")
        }
        let ratio = Statistics.median(ratios)
        let log = try report.record("edge-posts", columns: ["edge q/s", "direct q/s", "edge ÷ direct", "edge CPU µs/req"],
                                    values: [Statistics.median(edgeRates), Statistics.median(directRates), ratio, Statistics.median(cpu)],
                                    digits: 2)
        return """
        ### A post through the edge

        \(sample.count) of the imported posts, each round one after another for \(duration) s each: wrk (2 threads, 4 keep-alive
        connections) asking `GET /v1/posts/{id}` of the edge, cycling through them; then 4 closed-loop ZeroMQ clients
        sending `catalogue.posts.get` for the same posts to catalogue direct.

        | round | what | requests/s | p50 ms | p99 ms | errors | edge CPU per request |
        |---|---|---|---|---|---|---|
        \(rows)
        | target | this run (median of its rounds) | every run of this build |
        |---|---|---|
        | through the edge ≥ 60 % of `catalogue.posts.get` direct | \(format(ratio * 100)) % (\(format(Statistics.median(edgeRates))) vs \(format(Statistics.median(directRates))) q/s) | \(log.headline(2, digits: 2)): \(log.median(2) >= 0.6 ? "met" : "not met") |
        | the edge's CPU per request | \(format(Statistics.median(cpu), 1)) µs | \(log.headline(3, unit: " µs", digits: 1)) |
        """
    }

    // MARK: Sockets

    private func manySockets(stack: BenchStack, port: Int, fileLimit: Int) throws -> String {
        let edgePid = stack.pid("edge")!
        let idleRSS = ProcessCPU.residentBytes(edgePid) ?? 0
        print("edge: \(sockets) users")
        let users = try Self.anonymousUsers(sockets, endpoint: stack.endpoint("auth"))
        let latencies = Mutex<[Double]>([])
        let swarmStart = Date()
        print("edge: opening \(sockets) sockets")
        let swarm = try SocketSwarm(port: port, tokens: users.map(\.token)) { _, text in
            // {"type":"chat.message","message":{…,"text":"t=<uptime ns>",…}}
            guard let range = text.range(of: #""text":"t="#) else { return }
            let digits = text[range.upperBound...].prefix { $0.isNumber }
            guard let sent = UInt64(digits) else { return }
            let received = DispatchTime.now().uptimeNanoseconds
            latencies.withLock { $0.append(Double(received &- sent) / 1_000_000) }
        }
        swarm.start()
        defer { swarm.stop() }
        let signedIn = swarm.waitReady(timeout: 120)
        let openSeconds = Date().timeIntervalSince(swarmStart)
        Thread.sleep(forTimeInterval: 2)
        let openRSS = ProcessCPU.residentBytes(edgePid) ?? 0

        // Registered senders (anonymous users may not send), each message to the next socket's user, at a steady rate.
        let auth = ServiceClient(service: "auth", endpoint: stack.endpoint("auth"), timeout: 60, tries: 1)
        defer { auth.close() }
        let senders = try (0..<8).map { index in
            try auth.call(AuthAPI.register, RegisterRequest(email: "sender\(index)@example.org", password: "bench password")).accessToken
        }
        let rate = 1_000.0, threads = 4, sendSeconds = max(10, seconds)
        let total = Int(rate * sendSeconds)
        let sent = Atomic<Int>(0), failed = Atomic<Int>(0)
        let recipients = users.map(\.id)
        print("edge: chat at \(Int(rate))/s for \(format(sendSeconds)) s")
        let sendStart = DispatchTime.now().uptimeNanoseconds + 200_000_000
        let workers = (0..<threads).map { thread in
            ServiceThread(name: "sender-\(thread)") {
                let http = KeepAliveHTTP(port: port)
                var number = thread
                while number < total {
                    // Message n is due at start + n / rate, whichever thread sends it.
                    let due = sendStart + UInt64(Double(number) / rate * 1_000_000_000)
                    let now = DispatchTime.now().uptimeNanoseconds
                    if due > now { usleep(UInt32((due - now) / 1000)) }
                    let body = JSONWriter.data(.object(["to": .string(recipients[number % recipients.count]),
                                                        "text": .string("t=\(DispatchTime.now().uptimeNanoseconds)")]))
                    let reply = try? http.send("POST", "/v1/messages", token: senders[number % senders.count], body: body,
                                               contentType: "application/json")
                    if reply?.status == 201 { sent.add(1, ordering: .relaxed) } else { failed.add(1, ordering: .relaxed) }
                    number += threads
                }
            }
        }
        workers.forEach { $0.join() }
        let achieved = Double(sent.load(ordering: .relaxed)) / (Double(DispatchTime.now().uptimeNanoseconds - sendStart) / 1e9)
        // What is still on its way arrives within a few seconds, or is lost.
        let expected = sent.load(ordering: .relaxed)
        let waitUntil = Date().addingTimeInterval(10)
        while latencies.withLock({ $0.count }) < expected, Date() < waitUntil { Thread.sleep(forTimeInterval: 0.1) }
        let measured = latencies.withLock { $0 }.sorted()
        let loadedRSS = ProcessCPU.residentBytes(edgePid) ?? 0
        func percentile(_ p: Double) -> Double {
            measured.isEmpty ? .nan : measured[min(measured.count - 1, Int((Double(measured.count) * p).rounded(.up)) - 1)]
        }
        let p99 = percentile(0.99)
        let log = try report.record("edge-sockets", columns: ["sockets", "edge RSS MB", "sends/s", "delivered", "p50 ms", "p99 ms"],
                                    values: [Double(signedIn), Double(openRSS) / 1_000_000, achieved, Double(measured.count),
                                             percentile(0.5), p99], digits: 1)
        func verdict(_ met: Bool) -> String { met ? "met" : "not met" }
        let mb = { (bytes: Int) in format(Double(bytes) / 1_000_000) + " MB" }
        return """
        ### \(format(Double(sockets))) WebSockets on one edge

        \(format(Double(sockets))) anonymous users, each with one `/v1/events` socket signed in with its token (one process
        polls them all, answering pings; the file limit raised to \(fileLimit)). \(signedIn) of \(sockets) signed in, in
        \(format(openSeconds, 1)) s. Then 8 registered senders sent `POST /v1/messages` through the edge at
        \(Int(rate)) a second for \(format(sendSeconds)) s (4 threads on keep-alive connections, each message due at a fixed time),
        each to the next socket's user, its send time in the text: send-to-receive is from just before the POST to
        the socket's reading the message. \(expected) sent (\(failed.load(ordering: .relaxed)) failed),
        \(format(achieved)) a second achieved; \(measured.count) delivered.

        | | edge RSS |
        |---|---|
        | idle, before the sockets | \(mb(idleRSS)) |
        | with \(signedIn) sockets signed in | \(mb(openRSS)) |
        | after the chat load | \(mb(loadedRSS)) |

        | target | this run | every run of this build |
        |---|---|---|
        | edge RSS with \(format(Double(sockets))) sockets ≤ 300 MB | \(mb(openRSS)) | \(log.headline(1, unit: " MB")): \(verdict(log.median(1) <= 300)) |
        | chat at 1,000/s delivered, p99 ≤ 50 ms | p99 \(format(p99, 1)) ms (p50 \(format(percentile(0.5), 1)), max \(format(measured.last ?? .nan, 1))) | \(log.headline(5, unit: " ms")): \(verdict(log.median(5) <= 50)) |
        | every message sent delivered | \(measured.count) of \(expected) | \(verdict(measured.count == expected)) in this run |
        """
    }

    /// `count` anonymous users through auth direct, four at a time: their ids and tokens.
    static func anonymousUsers(_ count: Int, endpoint: String) throws -> [(id: String, token: String)] {
        let users = Mutex<[Int: (id: String, token: String)]>([:])
        let failures = Atomic<Int>(0)
        let threads = (0..<4).map { thread in
            ServiceThread(name: "anonymous-\(thread)") {
                let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 30, tries: 1)
                defer { client.close() }
                for index in stride(from: thread, to: count, by: 4) {
                    guard let session = try? client.call(AuthAPI.anonymous, Empty()) else {
                        failures.add(1, ordering: .relaxed)
                        continue
                    }
                    users.withLock { $0[index] = (session.user.id, session.accessToken) }
                }
            }
        }
        threads.forEach { $0.join() }
        guard failures.load(ordering: .relaxed) == 0 else { throw PeerError("\(failures.load(ordering: .relaxed)) anonymous sign-ups failed") }
        let all = users.withLock { $0 }
        return (0..<count).compactMap { all[$0] }
    }
}

extension DatasetQuery {
    /// The query as `GET /v1/search`'s path and query, as an app asks it.
    var searchPath: String {
        var path = "/v1/search?lat=\(lat)&lon=\(lon)&radius=\(radius)&limit=20"
        if !term.isEmpty {
            path += "&q=" + (term.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? term)
        }
        return path
    }
}
