import Contracts
import Dispatch
import Foundation
import ServiceClient
import ServiceKitTesting
import Synchronization
import Wire
import ZeroMQ

/// Live queries (geo's watches): the dataset in geo, `watches` open around its places,
/// and posts created at 1,000/s: how soon a watcher hears of a new post, what each
/// change costs geo, and what the open watches cost searches.
struct WatchBenchmark {
    var seconds: Double
    var directory: URL
    var dataset: URL
    var report: BenchmarkReport
    var watches = 100_000
    /// Posts created per second while the watches are open.
    static let changeRate = 1_000.0
    static let terms = ["bike", "burger", "pizza", "museum", "coffee", "sushi", "park", "lamp"]

    func run() throws -> String {
        let posts = try DatasetPost.load(dataset)
        let queries = try DatasetQuery.load(dataset)
        let stack = try BenchStack(directory: directory, services: ["auth", "catalogue", "geo"])
        defer { stack.stop() }
        let auth = ServiceClient(service: "auth", endpoint: stack.endpoint("auth"), timeout: 60, tries: 1)
        defer { auth.close() }
        let token = try auth.call(AuthAPI.register, RegisterRequest(email: "watch-bench@example.org", password: "bench password")).accessToken
        print("watches: importing \(posts.count) posts through catalogue")
        _ = try DatasetImport.runUntilSearchable(posts, token: token, catalogue: stack.endpoint("catalogue"), geo: stack.endpoint("geo"))
        let geo = ServiceClient(service: "geo", endpoint: stack.endpoint("geo"), timeout: 60, tries: 1)
        defer { geo.close() }
        let geoPID = try stack.pid("geo").orThrow("geo's pid")

        let frames = queries.map(\.searchFrame)
        let ok = Data(#""ok":true"#.utf8)
        func searchRate() -> LoadResult {
            let count = frames.count
            return LoadGenerator.run(endpoint: stack.endpoint("geo"), clients: 4, seconds: seconds,
                                     request: { client, sequence in [frames[(client * count / 4 + sequence) % count]] },
                                     check: { $0.range(of: ok) != nil })
        }
        print("watches: changes without watches")
        let quiet = try changes(stack: stack, token: token, posts: posts, geoPID: geoPID, round: 0)

        // The watches: 50 a user (geo's cap), circles of 1–25 km around the queries'
        // centres (the dataset's places), half with a term; opened before each round
        // that has them and closed after it, so that the searches alternate with and
        // without them in the same process.
        let users = try (0..<(watches + GeoRules.watchesPerUser - 1) / GeoRules.watchesPerUser).map { _ in
            try auth.call(AuthAPI.anonymous, Empty()).accessToken
        }
        let geoEndpoint = stack.endpoint("geo"), watches = self.watches
        func openAll() -> [(id: String, token: String)] {
            let opened = Mutex<[(id: String, token: String)]>([])
            let openers = (0..<4).map { part in
                ServiceThread(name: "bench-open-\(part)") {
                    let client = ServiceClient(service: "geo", endpoint: geoEndpoint, timeout: 60, tries: 1)
                    defer { client.close() }
                    var random = SeededRandom(state: UInt64(part + 1))
                    for n in stride(from: part, to: watches, by: 4) {
                        let query = queries[Int(random.next() % UInt64(queries.count))]
                        let radius = 1_000 + Double(random.next() % 24_000)
                        let term = n % 2 == 0 ? Self.terms[n / 2 % Self.terms.count] : nil
                        let request = WatchOpenRequest(search: SearchRequest(lat: query.lat, lon: query.lon, radius: radius, q: term, limit: 1))
                        let owner = users[n / GeoRules.watchesPerUser]
                        if let reply = try? client.call(GeoAPI.watchOpen, request, token: owner) {
                            opened.withLock { $0.append((reply.watch.id, owner)) }
                        }
                    }
                }
            }
            openers.forEach { $0.join() }
            return opened.withLock { $0 }
        }
        func closeAll(_ open: [(id: String, token: String)]) {
            let closers = (0..<4).map { part in
                ServiceThread(name: "bench-close-\(part)") {
                    let client = ServiceClient(service: "geo", endpoint: geoEndpoint, timeout: 60, tries: 1)
                    defer { client.close() }
                    for index in stride(from: part, to: open.count, by: 4) {
                        _ = try? client.call(GeoAPI.watchClose, WatchRequest(id: open[index].id), token: open[index].token)
                    }
                }
            }
            closers.forEach { $0.join() }
        }

        var searchesBefore: [LoadResult] = [], searchesWith: [LoadResult] = []
        var openSeconds = 0.0, openCount = 0, resident = 0
        var busy: Changes?
        for round in 0..<3 {
            print("watches: round \(round + 1): searches without watches, then with \(watches)")
            searchesBefore.append(searchRate())
            let opening = Date()
            let open = openAll()
            if round == 0 {
                openSeconds = Date().timeIntervalSince(opening)
                openCount = open.count
                resident = stack.residentBytes("geo") ?? 0
                print("watches: changes with \(openCount) watches")
                busy = try changes(stack: stack, token: token, posts: posts, geoPID: geoPID, round: 1)
            }
            searchesWith.append(searchRate())
            closeAll(open)
        }
        guard let busy else { throw PeerError("no round with watches ran") }

        let before = Statistics.median(searchesBefore.map(\.rate)), with = Statistics.median(searchesWith.map(\.rate))
        let pairs = zip(searchesWith, searchesBefore).map { $0.rate / $1.rate }
        let p99 = busy.percentile(0.99)
        let log = try report.record("watches", columns: ["watches", "event p99 ms", "CPU ms/change", "CPU ms/change (none)",
                                                         "search q/s", "search q/s (none)", "× search", "RSS MB"],
                                    values: [Double(openCount), p99, busy.cpuPerChange, quiet.cpuPerChange, with, before, with / before,
                                             Double(resident) / 1_000_000], digits: 2)
        var rows = ""
        for (index, (without, with)) in zip(searchesBefore, searchesWith).enumerated() {
            rows += "| \(index + 1) | none | \(format(without.rate)) | \(format(without.percentile(0.5), 2)) | \(format(without.percentile(0.99), 2)) | |\n"
            rows += "| \(index + 1) | \(openCount) | \(format(with.rate)) | \(format(with.percentile(0.5), 2)) | \(format(with.percentile(0.99), 2)) | \(format(with.rate / without.rate, 3)) × |\n"
        }
        return """
        ## Live queries: watches

        \(Machine.measured(with: "`make bench`"))
        `auth-service`, `catalogue-service` and `geo-service` as separate processes, the dataset's \(posts.count) posts in
        geo. \(openCount) watches opened (of \(watches) asked) by \(users.count) anonymous users, 50 each: circles of
        1–25 km around random query centres (the dataset's places), every other one with a term; opening them took
        \(format(openSeconds, 1)) s. Geo's resident memory with them: \(format(Double(resident) / 1_000_000, 0)) MB.

        **Changes.** 4 writers create posts through catalogue at \(format(Self.changeRate)) a second in all for
        \(format(seconds)) s, each near a random dataset post, titled with a term. One SUB socket (plaintext: the
        service role) on geo's `geo.watch/` topics; latency from just before the create to the first event that
        names the post, on this machine's monotonic clock. Geo's CPU (user + system, from /proc) over the run,
        per post created.

        | watches | posts created | events received | posts heard of | p50 ms | p99 ms | geo CPU ms per change |
        |---|---|---|---|---|---|---|
        | none | \(quiet.created) | \(quiet.events) | \(quiet.latencies.count) | – | – | \(format(quiet.cpuPerChange, 3)) |
        | \(openCount) | \(busy.created) | \(busy.events) | \(busy.latencies.count) | \(format(busy.percentile(0.5), 2)) | \(format(p99, 2)) | \(format(busy.cpuPerChange, 3)) |

        **Searches** (`geo.search` of the dataset's queries, 4 clients, closed loop, \(format(seconds)) s a run), alternating
        in the same process: each round searches without watches, opens them, searches with them, and closes them
        (so a round's pair differs only by the watches; the first round also measures the changes above):

        | round | watches | q/s | p50 ms | p99 ms | with ÷ without |
        |---|---|---|---|---|---|
        \(rows)
        This run: create → event p99 \(format(p99, 2)) ms (target ≤ 100: \(p99 <= 100 ? "met" : "not met")); searches with
        the watches at \(format(with / before * 100, 1)) % of without (medians of the rounds; the rounds' own ratios
        \(pairs.map { format($0, 3) }.joined(separator: ", "))) (target ≥ 90 %: \(with / before >= 0.9 ? "met" : "not met")).
        Over every run of this build: p99 \(log.headline(1, unit: " ms", digits: 2)), searches \(log.headline(6, unit: "×", digits: 3)).
        """
    }

    struct Changes {
        var created: Int
        var events: Int
        var latencies: [Double]
        var cpuPerChange: Double

        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return .nan }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
        }
    }

    /// Posts created at `changeRate` for `seconds`, each titled with its send time,
    /// and the events geo publishes for them.
    private func changes(stack: BenchStack, token: String, posts: [DatasetPost], geoPID: Int32, round: Int) throws -> Changes {
        let firstHeard = Mutex<[UInt64: Double]>([:])
        let events = Atomic<Int>(0)
        let ready = DispatchSemaphore(value: 0)
        let endpoint = stack.eventsEndpoint("geo")
        let listener = ServiceThread(name: "bench-watch-sub") {
            guard let subscriber = try? Context.shared.makeSocket(.subscribe) else { ready.signal(); return }
            defer { subscriber.close() }
            try? subscriber.set(.subscribe(Data(GeoAPI.watchTopicPrefix.utf8)))
            try? subscriber.set(.receiveHighWaterMark(messages: 0))
            try? subscriber.set(.receiveTimeout(milliseconds: 3000))
            try? subscriber.connect(endpoint)
            ready.signal()
            let marker = Data(" t=".utf8)
            while let frames = try? subscriber.receiveMessage(), frames.count == 2 {
                let arrived = DispatchTime.now().uptimeNanoseconds
                events.add(1, ordering: .relaxed)
                guard let range = frames[1].range(of: marker) else { continue }
                let digits = frames[1][range.upperBound...].prefix { $0 >= 48 && $0 <= 57 }
                guard let sent = UInt64(String(decoding: digits, as: UTF8.self)) else { continue }
                firstHeard.withLock { heard in
                    if heard[sent] == nil { heard[sent] = Double(arrived - sent) / 1_000_000 }
                }
            }
        }
        ready.wait()
        Thread.sleep(forTimeInterval: 0.5)  // the subscription reaches geo's PUB socket
        let cpuBefore = ProcessCPU.seconds(geoPID) ?? .nan
        let created = Atomic<Int>(0)
        let perWriter = Self.changeRate / 4
        let catalogue = stack.endpoint("catalogue"), seconds = self.seconds
        let writers = (0..<4).map { writer in
            ServiceThread(name: "bench-create-\(writer)") {
                let client = ServiceClient(service: "catalogue", endpoint: catalogue, timeout: 10, tries: 1)
                defer { client.close() }
                var random = SeededRandom(state: UInt64(100 * round + writer + 7))
                let start = DispatchTime.now().uptimeNanoseconds
                for n in 0..<Int(perWriter * seconds) {
                    let due = start + UInt64(Double(n) / perWriter * 1e9)
                    let now = DispatchTime.now().uptimeNanoseconds
                    if due > now { usleep(UInt32((due - now) / 1000)) }
                    let near = posts[Int(random.next() % UInt64(posts.count))]
                    // Within about a kilometre of it.
                    let lat = max(-90, min(90, near.lat + Double(random.next() % 2_000) / 100_000 - 0.01))
                    let title = "\(Self.terms[n % Self.terms.count]) t=\(DispatchTime.now().uptimeNanoseconds)"
                    let draft = PostDraft(kind: "offer", title: title, lat: lat, lon: near.lon)
                    if (try? client.call(CatalogueAPI.create, CreatePostRequest(draft), token: token)) != nil {
                        created.add(1, ordering: .relaxed)
                    }
                }
            }
        }
        writers.forEach { $0.join() }
        // The listener stops at its receive timeout, once the last events are in.
        listener.join()
        let cpu = (ProcessCPU.seconds(geoPID) ?? .nan) - cpuBefore
        let count = created.load(ordering: .relaxed)
        return Changes(created: count, events: events.load(ordering: .relaxed), latencies: Array(firstHeard.withLock { $0.values }),
                       cpuPerChange: cpu * 1000 / Double(max(1, count)))
    }
}

extension Optional {
    func orThrow(_ what: String) throws -> Wrapped {
        guard let self else { throw PeerError("no \(what)") }
        return self
    }
}
