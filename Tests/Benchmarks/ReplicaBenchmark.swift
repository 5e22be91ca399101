import Contracts
import Foundation
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Wire

/// Issue 25's replica figures: geo.search throughput from one geo process and from
/// two replicas following the same catalogue, the geo processes' CPU per search, and
/// how long a new replica takes to rebuild from the feed; from those, the replicas a
/// deployment needs for 100k searches a second.
struct ReplicaBenchmark {
    var seconds: Double
    var directory: URL
    var dataset: URL
    var report: BenchmarkReport

    /// The search rate the projection is made for.
    static let target = 100_000.0

    func run() throws -> String {
        let posts = try DatasetPost.load(dataset)
        let queries = try DatasetQuery.load(dataset)
        let geoEndpoints = [try ChildProcess.freeEndpoint(), try ChildProcess.freeEndpoint()]
        let geoEvents = [try ChildProcess.freeEndpoint(), try ChildProcess.freeEndpoint()]
        let stack = try BenchStack(directory: directory, services: ["auth", "catalogue", "geo"], environment: [
            ServiceEndpoints.requestsVariable(GeoAPI.service): geoEndpoints.joined(separator: ","),
            ServiceEndpoints.eventsVariable(GeoAPI.service): geoEvents.joined(separator: ","),
        ])
        defer { stack.stop() }
        let token = try stack.register("replica-bench@example.org").accessToken

        print("replicas: importing \(posts.count) posts through catalogue, geo replica 0 following")
        let (imported, searchable) = try DatasetImport.runUntilSearchable(posts, token: token, catalogue: stack.endpoint("catalogue"),
                                                                          geo: geoEndpoints[0])
        // A second replica from an empty file: it rebuilds from catalogue's feed alone.
        print("replicas: starting replica 1 from an empty file")
        let started = Date()
        _ = try stack.startReplica(GeoAPI.service, index: 1)
        let second = ServiceClient(service: "geo", endpoint: geoEndpoints[1], timeout: 60, tries: 1)
        defer { second.close() }
        while true {
            if let stats = try? second.call(GeoAPI.stats, Empty()), stats.posts >= imported.ids.count, stats.lag.values.allSatisfy({ $0 == 0 }) { break }
            guard Date().timeIntervalSince(started) < 900 else { throw PeerError("replica 1 did not catch up within 15 minutes") }
            Thread.sleep(forTimeInterval: 0.5)
        }
        let rebuild = Date().timeIntervalSince(started)
        let pids = [stack.pid("geo"), stack.pid("geo-1")].compactMap { $0 }

        let frames = queries.map(\.searchFrame)
        let okPrefix = Data(#""ok":true"#.utf8)
        let count = queries.count
        /// One round: 4 closed-loop clients over `endpoints`, and the geo processes' CPU seconds meanwhile.
        func round(_ endpoints: [String]) -> (result: LoadResult, cpuPerSearch: Double) {
            let before = pids.map { ProcessCPU.seconds($0) ?? 0 }
            let result = LoadGenerator.run(endpoints: endpoints, clients: 4, seconds: seconds, warmup: 0, request: { client, sequence in
                [frames[(client * count / 4 + sequence) % count]]
            }, check: { $0.range(of: okPrefix) != nil })
            let cpu = zip(pids.map { ProcessCPU.seconds($0) ?? 0 }, before).map { $0 - $1 }.reduce(0, +)
            return (result, cpu / Double(max(1, result.requests)))
        }
        print("replicas: measuring")
        var rows = ""
        var one: [Double] = [], two: [Double] = [], cpuOne: [Double] = [], cpuTwo: [Double] = []
        for index in 0..<3 {
            let single = round([geoEndpoints[0]])
            let pair = round(geoEndpoints)
            one.append(single.result.rate)
            two.append(pair.result.rate)
            cpuOne.append(single.cpuPerSearch * 1e6)
            cpuTwo.append(pair.cpuPerSearch * 1e6)
            rows += "| \(index + 1) | \(format(single.result.rate)) | \(format(single.cpuPerSearch * 1e6, 1)) µs "
                + "| \(format(pair.result.rate)) | \(format(pair.cpuPerSearch * 1e6, 1)) µs | \(format(pair.result.rate / single.result.rate, 2)) × "
                + "| \(single.result.errors + pair.result.errors) |\n"
        }
        let rateOne = Statistics.median(one), rateTwo = Statistics.median(two)
        let microseconds = Statistics.median(cpuOne + cpuTwo)
        // A search costs `microseconds` of one core in geo; a replica answers searches on
        // one thread (the socket's owner), so it gives at most one core to them.
        let perReplica = 1e6 / microseconds
        let replicasNeeded = (Self.target / perReplica).rounded(.up)
        let cores = Self.target * microseconds / 1e6
        let log = try report.record("replicas", columns: ["1 replica q/s", "2 replicas q/s", "× of 1", "µs CPU per search", "replicas for 100k/s"],
                                    values: [rateOne, rateTwo, rateTwo / rateOne, microseconds, replicasNeeded], digits: 2)
        return """
        ## Geo replicas: one process and two

        \(Machine.measured(with: "`make bench` (`hereabouts-bench all --dataset bench-data --only replicas`)"))
        Auth, catalogue and geo as processes; the benchmark dataset's \(format(Double(imported.ids.count))) posts imported
        through catalogue (searchable in geo replica 0 after \(format(searchable ?? 0, 1)) s); then a second geo replica
        started on an empty file of its own rebuilt from catalogue's feed alone in \(format(rebuild, 1)) s. Each round:
        \(format(seconds)) s of the dataset's \(format(Double(count))) `geo.search` queries (terms, place, radius) from 4
        closed-loop clients on raw REQ sockets, first all at replica 0, then two clients at each replica; the geo processes'
        CPU time (user + system, /proc) over the searches answered.

        | round | 1 replica q/s | CPU per search | 2 replicas q/s | CPU per search | 2 ÷ 1 | errors |
        |---|---|---|---|---|---|---|
        \(rows)
        This run's medians: \(format(rateOne)) q/s from one replica, \(format(rateTwo)) q/s from two
        (\(format(rateTwo / rateOne, 2)) ×), \(format(microseconds, 1)) µs of geo CPU per search. Over every run of
        this build in the log: two replicas \(log.headline(2, unit: " ×", digits: 2)) of one, CPU per search
        \(log.headline(3, unit: " µs", digits: 1)).

        What limits it here: the geo processes used \(format(rateOne * Statistics.median(cpuOne) / 1e6, 2)) cores with one
        replica and \(format(rateTwo * Statistics.median(cpuTwo) / 1e6, 2)) with two (rate × CPU per search, medians), on a
        machine of \(ProcessInfo.processInfo.activeProcessorCount) cores that the load generator's 4 threads share. A replica
        answers searches on the one thread that owns its socket, so it cannot give them more than one core; a second
        replica had little idle CPU here to add.

        Projection: at \(format(microseconds, 1)) µs of CPU per search, \(format(Self.target)) searches a second need
        \(format(cores, 1)) cores of geo, and at one core of searching per replica, \(format(replicasNeeded)) replicas
        (\(format(perReplica)) q/s each), plus the clients' and the edge's CPU on other machines: for example
        \(format((replicasNeeded / 7).rounded(.up))) machines of 8 cores running 7 replicas each. Each replica holds the
        whole index (390 MB resident at 1M posts, see the geo section), so memory grows with replicas, not with load.
        """
    }
}
