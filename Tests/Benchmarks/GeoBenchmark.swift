import Contracts
import Foundation
import Geo
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Synchronization
import Wire

/// The geo issue's figures: the dataset's queries against Redis and PostGIS in one
/// run, exactness against brute force, start-up, freshness and catch-up.
struct GeoBenchmark {
    var seconds: Double
    var directory: URL
    var dataset: URL
    var report: BenchmarkReport

    func run() throws -> String {
        let posts = try DatasetPost.load(dataset)
        let queries = try DatasetQuery.load(dataset)
        let stack = try BenchStack(directory: directory, services: ["auth", "catalogue", "geo"])
        defer { stack.stop() }
        let token = try stack.register("geo-bench@example.org").accessToken
        let geoEndpoint = stack.endpoint("geo")

        // 1. The dataset through catalogue, with geo following: until all is searchable.
        print("geo: importing \(posts.count) posts through catalogue")
        let (imported, catchUp) = try DatasetImport.runUntilSearchable(posts, token: token, catalogue: stack.endpoint("catalogue"),
                                                                       geo: geoEndpoint)

        let residentAfterImport = stack.residentBytes("geo") ?? 0

        // 2. Start-up on a file of a million posts. After a clean stop geo reads the
        // index's snapshot; after a crash (kill -9), the last snapshot and the rows that
        // changed after it (here a rating of each of 1,000 posts); with no snapshot at
        // all, every row of its database.
        print("geo: restarting")
        let startup = try stack.restart("geo")
        let resident = stack.residentBytes("geo") ?? 0
        let geo = ServiceClient(service: "geo", endpoint: geoEndpoint, timeout: 60, tries: 1)
        defer { geo.close() }
        let changedAfterSnapshot = try rate(Array(imported.ids.prefix(1_000)), token: token, catalogue: stack.endpoint("catalogue"), geo: geo)
        let startupAfterCrash = try stack.restart("geo", killing: true)
        let snapshot = directory.appendingPathComponent("geo.index").path
        let startupFromDatabase = try stack.restart("geo", killing: true) { unlink(snapshot) }
        let residentFromDatabase = stack.residentBytes("geo") ?? 0
        let stats = try geo.call(GeoAPI.stats, Empty())

        // 3. Every query's answer against brute force.
        print("geo: checking \(queries.count) answers against brute force")
        let exactness = try checkAgainstBruteForce(posts: posts, ids: imported.ids, queries: queries, client: geo)

        // 4. Freshness: a post created in catalogue, until geo.search returns it.
        print("geo: freshness")
        let freshness = try measureFreshness(token: token, catalogue: stack.endpoint("catalogue"), geo: geo, count: 1_000)

        // 5. Throughput, side by side: geo.search with the terms, Redis without, PostGIS with.
        print("geo: loading the peers")
        let redis = try RedisPeer(directory: directory)
        defer { redis.stop() }
        let redisLoaded = try loadRedis(redis, posts: posts)
        // Beside geo's data directory, not in it: services keep theirs to themselves (0700),
        // and PostgreSQL runs as its own user.
        let postgis = try PostGISPeer(directory: directory.deletingLastPathComponent().appendingPathComponent("geo-postgres"))
        defer { postgis.stop() }
        try loadPostGIS(postgis, posts: posts)

        let geoFrames = queries.map(\.searchFrame)
        let plainFrames = queries.map { $0.searchFrame(highlight: false) }
        let okPrefix = Data(#""ok":true"#.utf8)
        let count = queries.count
        // The transport's ceiling: a raw ZeroMQ echo answering with a reply of a
        // typical search's size, from the same client.
        let sampleReply = try geo.exchange([geoFrames[0]])?.first ?? Data()
        let echo = try stack.echo(replyBytes: sampleReply.count)
        var rows = ""
        var geoRates: [Double] = [], redisRates: [Double] = [], echoRates: [Double] = [], plainRates: [Double] = []
        // The same load from clients like Redis's: a blocking socket a thread, no libzmq.
        var alikeRates: [Double] = [], alikeEchoRates: [Double] = []
        let okAlike = Array(okPrefix)
        let answeredOK: @Sendable ([UInt8]) -> Bool = { reply in
            let head = reply.prefix(160)
            return head.indices.contains { head[$0...].starts(with: okAlike) }
        }
        var geoLatencies: [Double] = []
        print("geo: measuring")
        for round in 0..<3 {
            let geoResult = LoadGenerator.run(endpoint: geoEndpoint, clients: 4, seconds: seconds,
                                              request: { client, sequence in [geoFrames[(client * count / 4 + sequence) % count]] },
                                              check: { $0.range(of: okPrefix) != nil })
            let redisPort = redis.port
            let redisResult = ClosedLoop.run(clients: 4, seconds: seconds) { client in
                guard let connection = try? RedisConnection(port: redisPort) else { return nil }
                return ClosedLoop.Client { sequence in
                    let query = queries[(client * count / 4 + sequence) % count]
                    let reply = try connection.send(["GEOSEARCH", "posts", "FROMLONLAT", "\(query.lon)", "\(query.lat)",
                                                     "BYRADIUS", "\(query.radius)", "m", "ASC", "COUNT", "20"])
                    if case .array = reply { return true }
                    return false
                }
            }
            let echoResult = LoadGenerator.run(endpoint: echo, clients: 4, seconds: seconds,
                                               request: { client, sequence in [geoFrames[(client * count / 4 + sequence) % count]] },
                                               check: { $0.count == sampleReply.count })
            let alikeResult = LoadGenerator.runBlocking(endpoint: geoEndpoint, clients: 4, seconds: seconds,
                                                        request: { client, sequence in [geoFrames[(client * count / 4 + sequence) % count]] },
                                                        check: answeredOK)
            let alikeEcho = LoadGenerator.runBlocking(endpoint: echo, clients: 4, seconds: seconds,
                                                      request: { client, sequence in [geoFrames[(client * count / 4 + sequence) % count]] },
                                                      check: { $0.count == sampleReply.count })
            alikeRates.append(alikeResult.rate)
            alikeEchoRates.append(alikeEcho.rate)
            echoRates.append(echoResult.rate)
            rows += "| \(round + 1) | raw ZeroMQ echo (\(sampleReply.count)-byte replies, no work) | \(format(echoResult.rate)) | \(format(echoResult.percentile(0.5), 2)) | \(format(echoResult.percentile(0.99), 2)) | \(echoResult.errors) |\n"
            rows += "| \(round + 1) | geo.search, clients as Redis's (a blocking socket speaking ZMTP) | \(format(alikeResult.rate)) | \(format(alikeResult.percentile(0.5), 2)) | \(format(alikeResult.percentile(0.99), 2)) | \(alikeResult.errors) |\n"
            rows += "| \(round + 1) | raw ZeroMQ echo, clients as Redis's | \(format(alikeEcho.rate)) | \(format(alikeEcho.percentile(0.5), 2)) | \(format(alikeEcho.percentile(0.99), 2)) | \(alikeEcho.errors) |\n"
            geoRates.append(geoResult.rate)
            redisRates.append(redisResult.rate)
            geoLatencies += geoResult.latencies
            rows += "| \(round + 1) | geo.search (with terms) | \(format(geoResult.rate)) | \(format(geoResult.percentile(0.5), 2)) | \(format(geoResult.percentile(0.99), 2)) | \(geoResult.errors) |\n"
            rows += "| \(round + 1) | Redis GEOSEARCH (no terms) | \(format(redisResult.rate)) | \(format(redisResult.percentile(0.5), 2)) | \(format(redisResult.percentile(0.99), 2)) | \(redisResult.errors) |\n"
        }
        // Highlights' cost: the same searches with and without them (`highlight: false`),
        // in short runs side by side, the order swapped each pair so that a machine
        // growing busier or quieter weighs on both alike.
        var highlightRatios: [Double] = [], highlightRows = ""
        for pair in 0..<6 {
            var rates: [Bool: Double] = [:]
            for highlight in pair % 2 == 0 ? [true, false] : [false, true] {
                let frames = highlight ? geoFrames : plainFrames
                let result = LoadGenerator.run(endpoint: geoEndpoint, clients: 4, seconds: max(2, seconds / 2),
                                               request: { client, sequence in [frames[(client * count / 4 + sequence) % count]] },
                                               check: { $0.range(of: okPrefix) != nil })
                rates[highlight] = result.rate
                if highlight { geoRates.append(result.rate) } else { plainRates.append(result.rate) }
            }
            highlightRatios.append(rates[true]! / rates[false]!)
            highlightRows += "| \(pair + 1) | \(format(rates[true]!)) | \(format(rates[false]!)) | \(format(rates[true]! / rates[false]! * 100, 1)) % |\n"
        }
        let postgisPort = postgis.port
        let postgisResult = ClosedLoop.run(clients: 4, seconds: seconds) { client in
            guard let connection = try? PostgresConnection(port: postgisPort, user: "postgres", database: "postgres") else { return nil }
            return ClosedLoop.Client { sequence in
                let query = queries[(client * count / 4 + sequence) % count]
                let point = "ST_SetSRID(ST_MakePoint(\(query.lon), \(query.lat)), 4326)::geography"
                let term = query.term.isEmpty ? "" : " AND tsv @@ to_tsquery('simple', '\(query.term):*')"
                let sql = "SELECT ref FROM post WHERE ST_DWithin(geog, \(point), \(query.radius), false)\(term) ORDER BY geog <-> \(point) LIMIT 20"
                _ = try connection.query(sql)
                return true
            }
        }
        rows += "| 4 | PostGIS ST_DWithin + GIN (with terms) | \(format(postgisResult.rate)) | \(format(postgisResult.percentile(0.5), 2)) | \(format(postgisResult.percentile(0.99), 2)) | \(postgisResult.errors) |\n"

        print("geo: search threads")
        let threads = try compareSearchThreads(stack: stack, frames: geoFrames)

        // The three rounds beside Redis (the pairs' runs are shorter, and only for highlights).
        let roundRates = Array(geoRates.prefix(3))
        let geoRate = Statistics.median(roundRates), redisRate = Statistics.median(redisRates)
        let sortedLatencies = geoLatencies.sorted()
        let geoP99 = sortedLatencies.isEmpty ? .nan : sortedLatencies[min(sortedLatencies.count - 1, Int(Double(sortedLatencies.count) * 0.99))]
        // Each round's geo against the Redis run beside it, then the median of those.
        let redisRatio = Statistics.median(zip(roundRates, redisRates).map { $0 / $1 }), postgisRatio = geoRate / postgisResult.rate
        let highlightRatio = Statistics.median(highlightRatios)
        let withHighlights = Statistics.median(Array(geoRates.dropFirst(3))), withoutHighlights = Statistics.median(plainRates)
        func verdict(_ met: Bool) -> String { met ? "met" : "not met" }
        let highlightLog = try report.record("geo-highlights", columns: ["with q/s", "without q/s", "with / without"],
                                             values: [withHighlights, withoutHighlights, highlightRatio], digits: 3)
        let log = try report.record("geo", columns: ["geo q/s", "Redis q/s", "× Redis", "PostGIS q/s", "× PostGIS", "p99 ms",
                                                     "start-up s", "RSS MB", "fresh p99 ms", "1M searchable s", "RSS after import MB",
                                                     "start-up from database s", "RSS from database MB", "start-up after kill -9 s"],
                                    values: [geoRate, redisRate, redisRatio, postgisResult.rate, postgisRatio, geoP99, startup,
                                             Double(resident) / 1_000_000, freshness.p99, catchUp ?? .nan,
                                             Double(residentAfterImport) / 1_000_000, startupFromDatabase,
                                             Double(residentFromDatabase) / 1_000_000, startupAfterCrash], digits: 2)
        // Each round's geo from clients like Redis's against that round's Redis.
        let alikeRatio = Statistics.median(zip(alikeRates, redisRates).map { $0 / $1 })
        let alikeRate = Statistics.median(alikeRates), alikeEchoRate = Statistics.median(alikeEchoRates)
        let alikeLog = try report.record("geo-clients-alike", columns: ["geo q/s", "Redis q/s", "× Redis", "echo q/s", "of the echo"],
                                         values: [alikeRate, redisRate, alikeRatio, alikeEchoRate, alikeRate / alikeEchoRate], digits: 2)
        let threadsLog = try report.record("geo-threads", columns: ["1 thread q/s", "\(threads.cores) threads q/s", "ratio",
                                                                   "1 thread µs CPU", "\(threads.cores) threads µs CPU"],
                                           values: [threads.median(1), threads.median(threads.cores),
                                                    threads.median(threads.cores) / threads.median(1),
                                                    threads.medianCPU(1), threads.medianCPU(threads.cores)], digits: 2)

        return """
        ## Geo: search against Redis and PostGIS

        \(Machine.measured(with: "`make bench`"))
        `auth-service`, `catalogue-service` and `geo-service` run as separate processes; the peers are
        Debian's Redis (\(redis.version)) and PostgreSQL 15 with PostGIS 3, started by the bench on loopback
        (PostgreSQL with `fsync=off`, `shared_buffers=256MB`) and stopped at the end.

        **Data.** The \(posts.count) posts and \(queries.count) queries of `../shared/bench/gen_dataset.py`.
        Geo got the posts through `catalogue.posts.import` and its feed; Redis got them with `GEOADD`
        (\(redisLoaded) points: Redis refuses latitudes beyond ±85.05°); PostGIS got them with `COPY`,
        a `geography(Point)` column with a GiST index and a `tsvector` of the title with a GIN index.

        **Throughput.** 4 concurrent clients, closed loop, \(format(seconds)) s per run, cycling through the
        \(queries.count) queries (half carry a term), top 20 by distance. Geo: `geo.search` with the term
        (`q`; its hits carry highlights);
        Redis: `GEOSEARCH … FROMLONLAT … BYRADIUS r m ASC COUNT 20`, no term; PostGIS:
        `ST_DWithin(geog, point, r, false)` and `tsv @@ to_tsquery('simple', 'term:*')`, `ORDER BY geog <-> point LIMIT 20`.
        Each peer is spoken to in its own wire protocol from a client thread of its own. Geo and the echo are asked
        twice each round: through libzmq's REQ socket (as services and `here` ask; libzmq adds an I/O thread and its
        wake-ups to every request, on the same two cores), and through a blocking TCP socket speaking ZMTP 3.1 itself,
        the kind of client Redis and PostgreSQL get here ("clients as Redis's").

        | round | peer | queries/s | p50 ms | p99 ms | errors |
        |---|---|---|---|---|---|
        \(rows)
        Highlights' cost, the same searches with and without them (`highlight: false`), \(format(max(2, seconds / 2))) s each,
        in six pairs whose order alternates:

        | pair | with highlights q/s | without q/s | with / without |
        |---|---|---|---|
        \(highlightRows)
        **Search threads.** Geo answers searches on one thread per core (`HEREABOUTS_GEO_SEARCH_THREADS`, \(threads.cores) here).
        The same load as above, geo restarted with 1 search thread and with \(threads.cores) in turns, the order swapped each
        pair; CPU per search is all of geo's (every thread's) over the run, from `/proc/<pid>/stat`:

        | pair | search threads | queries/s | p99 ms | geo µs CPU per search |
        |---|---|---|---|---|
        \(threads.rows)
        \(threads.cores) threads against 1: \(format(threads.median(threads.cores) / threads.median(1), 2)) × (medians \(format(threads.median(threads.cores))) vs \(format(threads.median(1))) q/s);
        every run of this build: \(threadsLog.headline(2, unit: " ×", digits: 2)).

        This run's figures are medians of its three rounds (each round's geo against the Redis round beside it);
        the last column gives the median over every run of this build in the log at the end of this page.

        | target | this run | every run of this build |
        |---|---|---|
        | (transport ceiling) | geo.search reaches \(format(geoRate / Statistics.median(echoRates) * 100)) % of the raw ZeroMQ echo | |
        | geo.search ≥ 2.5 × Redis (geo through libzmq's client) | \(format(redisRatio, 2)) × (\(format(geoRate)) vs \(format(redisRate)) q/s) | \(log.headline(2, unit: " ×")): \(verdict(log.median(2) >= 2.5)) |
        | geo.search ≥ 2.5 × Redis, clients alike (a blocking socket each) | \(format(alikeRatio, 2)) × (\(format(alikeRate)) vs \(format(redisRate)) q/s; \(format(alikeRate / alikeEchoRate * 100)) % of the echo from the same clients) | \(alikeLog.headline(2, unit: " ×")): \(verdict(alikeLog.median(2) >= 2.5)) |
        | geo.search ≥ 20 × PostGIS | \(format(postgisRatio, 1)) × (\(format(geoRate)) vs \(format(postgisResult.rate)) q/s) | \(log.headline(4, unit: " ×")): \(verdict(log.median(4) >= 20)) |
        | geo.search with highlights ≥ 95 % of without | \(format(highlightRatio * 100, 1)) % (median of the pairs' ratios; \(format(withHighlights)) vs \(format(withoutHighlights)) q/s) | \(highlightLog.headline(2, unit: " ×", digits: 3)): \(verdict(highlightLog.median(2) >= 0.95)) |
        | geo.search p99 ≤ 1 ms | \(format(geoP99, 2)) ms | \(log.headline(5, unit: " ms")): \(verdict(log.median(5) <= 1)) |
        | answers equal brute force (100 %) | \(exactness.equal) of \(queries.count)\(exactness.firstDifference.map { " (first difference: \($0))" } ?? "") | \(verdict(exactness.equal == queries.count)) in this run |
        | start-up with \(stats.posts) posts ≤ 3 s, after a clean stop (from the index's snapshot) | \(format(startup, 2)) s from process start to answering | \(log.headline(6, unit: " s")): \(verdict(log.median(6) <= 3)) |
        | start-up with \(stats.posts) posts ≤ 3 s, after kill -9 (the last snapshot, then the \(changedAfterSnapshot) posts changed after it, from geo.sqlite) | \(format(startupAfterCrash, 2)) s | \(log.headline(13, unit: " s")): \(verdict(log.median(13) <= 3)) |
        | (start-up with no snapshot: every post read from geo.sqlite) | \(format(startupFromDatabase, 2)) s | \(log.headline(11, unit: " s")) |
        | RSS after start-up ≤ 400 MB, from the snapshot | \(format(Double(resident) / 1_000_000)) MB (the index's own estimate: \(format(Double(stats.memoryBytes) / 1_000_000)) MB) | \(log.headline(7, unit: " MB", digits: 0)): \(verdict(log.median(7) <= 400)) |
        | RSS after start-up ≤ 400 MB, from the database | \(format(Double(residentFromDatabase) / 1_000_000)) MB | \(log.headline(12, unit: " MB", digits: 0)): \(verdict(log.median(12) <= 400)) |
        | RSS right after importing \(posts.count) posts ≤ 450 MB | \(format(Double(residentAfterImport) / 1_000_000)) MB | \(log.headline(10, unit: " MB", digits: 0)): \(verdict(log.median(10) <= 450)) |
        | a new post found by geo.search, p99 of \(freshness.count) ≤ 250 ms | \(format(freshness.p99, 1)) ms (p50 \(format(freshness.p50, 1)) ms) | \(log.headline(8, unit: " ms", digits: 1)): \(verdict(log.median(8) <= 250)) |
        | \(posts.count) posts imported and all searchable ≤ 45 s | \(catchUp.map { format($0, 1) + " s" } ?? "not within 600 s") (catalogue's import alone took \(format(imported.seconds, 1)) s) | \(log.headline(9, unit: " s", digits: 1)): \(verdict(log.median(9) <= 45)) |
        """
    }

    // MARK: Search threads

    struct ThreadRuns {
        var cores: Int
        var rows = ""
        var rates: [Int: [Double]] = [:]
        var cpu: [Int: [Double]] = [:]

        func median(_ threads: Int) -> Double { Statistics.median(rates[threads] ?? []) }
        func medianCPU(_ threads: Int) -> Double { Statistics.median(cpu[threads] ?? []) }
    }

    /// Geo restarted with one search thread and with one per core, in turns; the
    /// same clients and queries as the rounds against Redis. The last run has one
    /// per core, so geo is left as it started.
    func compareSearchThreads(stack: BenchStack, frames: [Data]) throws -> ThreadRuns {
        let cores = max(2, ProcessInfo.processInfo.activeProcessorCount)
        var runs = ThreadRuns(cores: cores)
        let okPrefix = Data(#""ok":true"#.utf8)
        let count = frames.count
        for pair in 0..<3 {
            for threads in pair % 2 == 0 ? [1, cores] : [cores, 1] {
                _ = try stack.restart("geo", environment: ["HEREABOUTS_GEO_SEARCH_THREADS": "\(threads)"])
                guard let pid = stack.pid("geo") else { continue }
                let before = ProcessCPU.seconds(pid) ?? .nan
                let result = LoadGenerator.run(endpoint: stack.endpoint("geo"), clients: 4, seconds: seconds,
                                               request: { client, sequence in [frames[(client * count / 4 + sequence) % count]] },
                                               check: { $0.range(of: okPrefix) != nil })
                let cpu = ((ProcessCPU.seconds(pid) ?? .nan) - before) / Double(max(1, result.requests)) * 1_000_000
                runs.rates[threads, default: []].append(result.rate)
                runs.cpu[threads, default: []].append(cpu)
                runs.rows += "| \(pair + 1) | \(threads) | \(format(result.rate)) | \(format(result.percentile(0.99), 2)) | \(format(cpu, 1)) |\n"
            }
        }
        return runs
    }

    // MARK: Exactness

    struct Exactness {
        var equal: Int
        var firstDifference: String?
    }

    /// Brute force: the haversine distance of every post in the query's band of
    /// latitudes (all that can be within the radius), the term as the protocol says,
    /// ties by id.
    private func checkAgainstBruteForce(posts: [DatasetPost], ids: [String], queries: [DatasetQuery], client: ServiceClient) throws -> Exactness {
        let byLatitude = posts.indices.sorted { posts[$0].lat < posts[$1].lat }
        let latitudes = byLatitude.map { posts[$0].lat }
        let words = posts.map { ReferenceText.words($0.title) }
        var equal = 0
        var firstDifference: String?
        for (number, query) in queries.enumerated() {
            let band = query.radius / Sphere.radius * 180 / .pi + 1e-6
            var low = 0, high = latitudes.count
            while low < high {
                let middle = (low + high) / 2
                if latitudes[middle] < query.lat - band { low = middle + 1 } else { high = middle }
            }
            let term = ReferenceText.fold(query.term)
            var found: [(distance: Double, id: String)] = []
            var index = low
            while index < latitudes.count, latitudes[index] <= query.lat + band {
                let post = byLatitude[index]
                index += 1
                let distance = Sphere.distance(lat1: query.lat, lon1: query.lon, lat2: posts[post].lat, lon2: posts[post].lon)
                guard distance <= query.radius else { continue }
                if !term.isEmpty, !words[post].contains(where: { $0.hasPrefix(term) }) { continue }
                found.append((distance, ids[post]))
            }
            found.sort { $0.distance != $1.distance ? $0.distance < $1.distance : $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
            let expected = found.prefix(20).map(\.id)
            let answer = try client.call(GeoAPI.search, SearchRequest(lat: query.lat, lon: query.lon, radius: query.radius,
                                                                      q: query.term.isEmpty ? nil : query.term, limit: 20)).hits.map(\.id)
            if answer == expected {
                equal += 1
            } else if firstDifference == nil {
                firstDifference = "query \(number + 1): \(answer.count) hits, \(expected.count) expected"
            }
        }
        return Exactness(equal: equal, firstDifference: firstDifference)
    }

    // MARK: Changes after a snapshot

    /// Rates each of `ids` through catalogue and waits until geo has followed; the
    /// number of posts changed.
    private func rate(_ ids: [String], token: String, catalogue: String, geo: ServiceClient) throws -> Int {
        let client = ServiceClient(service: "catalogue", endpoint: catalogue, timeout: 30, tries: 1)
        defer { client.close() }
        for id in ids {
            _ = try client.call(CatalogueAPI.rate, SetRatingRequest(postId: id, stars: 4), token: token)
        }
        let deadline = Date().addingTimeInterval(60)
        while try geo.call(GeoAPI.stats, Empty()).lag[CatalogueAPI.service] != 0, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.05)
        }
        return ids.count
    }

    // MARK: Freshness

    struct Freshness {
        var count: Int
        var p50: Double
        var p99: Double
    }

    private func measureFreshness(token: String, catalogue: String, geo: ServiceClient, count: Int) throws -> Freshness {
        let client = ServiceClient(service: "catalogue", endpoint: catalogue, timeout: 30, tries: 1)
        defer { client.close() }
        var delays: [Double] = []
        for n in 0..<count {
            let lat = Double(n % 160) - 80 + 0.123, lon = Double(n * 7 % 360) - 180 + 0.456
            let word = "fresh\(n)x\(Int.random(in: 0..<1_000_000))"
            let started = Date()
            _ = try client.call(CatalogueAPI.create, CreatePostRequest(PostDraft(kind: "tip", title: word, lat: lat, lon: lon)), token: token)
            while true {
                let hits = try geo.call(GeoAPI.search, SearchRequest(lat: lat, lon: lon, radius: 100, q: word)).hits
                if !hits.isEmpty { break }
                guard Date().timeIntervalSince(started) < 10 else { break }
                Thread.sleep(forTimeInterval: 0.001)
            }
            delays.append(Date().timeIntervalSince(started) * 1000)
        }
        delays.sort()
        return Freshness(count: count, p50: delays[count / 2], p99: delays[min(count - 1, Int(Double(count) * 0.99))])
    }

    // MARK: Loading the peers

    private func loadRedis(_ redis: RedisPeer, posts: [DatasetPost]) throws -> Int {
        let connection = try RedisConnection(port: redis.port)
        var loaded = 0
        var commands: [[String]] = []
        var command = ["GEOADD", "posts"]
        for post in posts where abs(post.lat) <= 85.05112878 {
            command += ["\(post.lon)", "\(post.lat)", post.ref]
            loaded += 1
            if command.count >= 2 + 3 * 500 {
                commands.append(command)
                command = ["GEOADD", "posts"]
            }
            if commands.count == 20 {
                for reply in try connection.pipeline(commands) {
                    if case .error(let message) = reply { throw PeerError("GEOADD: \(message)") }
                }
                commands.removeAll()
            }
        }
        if command.count > 2 { commands.append(command) }
        for reply in try connection.pipeline(commands) {
            if case .error(let message) = reply { throw PeerError("GEOADD: \(message)") }
        }
        return loaded
    }

    private func loadPostGIS(_ postgis: PostGISPeer, posts: [DatasetPost]) throws {
        let file = postgis.readableFile("posts.tsv")
        var text = ""
        text.reserveCapacity(posts.count * 60)
        for post in posts {
            let title = post.title.replacingOccurrences(of: "\\", with: "\\\\")
            text += "\(post.ref)\t\(post.lon)\t\(post.lat)\t\(title)\n"
        }
        try text.write(to: file, atomically: true, encoding: .utf8)
        try postgis.grantRead(file)
        let connection = try postgis.connect()
        for sql in [
            "CREATE EXTENSION IF NOT EXISTS postgis",
            "CREATE TABLE raw (ref text, lon float8, lat float8, title text)",
            "COPY raw FROM '\(file.path)'",
            "CREATE TABLE post AS SELECT ref, ST_SetSRID(ST_MakePoint(lon, lat), 4326)::geography AS geog, to_tsvector('simple', title) AS tsv FROM raw",
            "CREATE INDEX post_geog ON post USING gist (geog)",
            "CREATE INDEX post_tsv ON post USING gin (tsv)",
            "DROP TABLE raw",
            "VACUUM ANALYZE post",
        ] {
            _ = try connection.query(sql)
        }
    }
}
