import Contracts
import EdgeFixtures
import Foundation
import ServiceKit
import ServiceKitTesting
import Synchronization
import Wire

/// Issue 34's fairness figure: a real user's logins from one address while another
/// address floods registrations, both through the edge with its production settings
/// (its rate limit, auth's standard scrypt cost and per-address account budget).
/// Rounds alternate: the logins alone, then with the flood. And the same with auth's
/// per-address budget off, so that the hashing queue's fairness alone is what holds.
struct FairnessBenchmark {
    var seconds: Double
    var directory: URL
    var report: BenchmarkReport

    static let floodThreads = 16

    struct Round {
        var latencies: [Double] = []
        var failures: [Int] = []
        var created = 0
        var refused = 0
    }

    func run() throws -> String {
        var sections: [String] = []
        var figures: [Double] = []
        for budget in [true, false] {
            let place = directory.appendingPathComponent(budget ? "budget" : "no-budget")
            try FileManager.default.createDirectory(at: place, withIntermediateDirectories: true)
            let stack = try BenchStack(directory: place, services: ["auth"],
                                       environment: ["HEREABOUTS_AUTH_ACCOUNTS_PER_ADDRESS": budget ? "100" : "0"])
            defer { stack.stop() }
            let port = try stack.startEdge(environment: ["HEREABOUTS_EDGE_RATE_LIMIT": "50/200"])
            let victim = EdgeClient(port: port).from("127.0.0.2")
            guard try victim.post("/v1/auth/register", ["email": "victim@example.org", "password": "victim password"]).status == 201 else {
                throw PeerError("the victim could not register")
            }
            var alone: [Round] = [], flooded: [Round] = []
            for round in 0..<3 {
                print("fairness (\(budget ? "budget on" : "budget off")): round \(round + 1), logins alone, then during a flood")
                alone.append(logins(victim, seconds: seconds))
                flooded.append(flood(port: port, round: round) { logins(victim, seconds: seconds) })
            }
            let p99Alone = Statistics.median(alone.map { percentile($0.latencies, 0.99) })
            let p99Flooded = Statistics.median(flooded.map { percentile($0.latencies, 0.99) })
            let failed = flooded.reduce(0) { $0 + $1.failures.count }
            figures += [p99Alone, p99Flooded, Double(failed)]
            var rows = ""
            for (index, (quiet, busy)) in zip(alone, flooded).enumerated() {
                rows += "| \(index + 1) | \(quiet.latencies.count) | \(ms(percentile(quiet.latencies, 0.5))) / \(ms(percentile(quiet.latencies, 0.99))) "
                    + "| \(busy.latencies.count) | \(ms(percentile(busy.latencies, 0.5))) / \(ms(percentile(busy.latencies, 0.99))) "
                    + "| \(busy.failures.isEmpty ? "none" : busy.failures.map(String.init).joined(separator: ", ")) | \(busy.created) / \(busy.refused) |\n"
            }
            sections.append("""
            **Auth's per-address budget of new accounts \(budget ? "on (100 an hour, bursts of 20)" : "off"):**

            | round | logins alone | p50 / p99 ms | logins during the flood | p50 / p99 ms | failed (status) | flood: created / refused |
            |---|---|---|---|---|---|---|
            \(rows)
            Medians of the rounds: p99 alone \(ms(p99Alone)) ms, during the flood \(ms(p99Flooded)) ms; \(failed) logins failed.
            """)
        }
        let log = try report.record("fairness", columns: ["p99 alone ms", "p99 flooded ms", "failed", "p99 alone ms (no budget)",
                                                          "p99 flooded ms (no budget)", "failed (no budget)"], values: figures, digits: 1)
        return """
        ## Fairness: one address's registration flood against another's logins

        \(Machine.measured(with: "`make bench`"))
        `auth-service` (scrypt at its standard cost, one hashing thread per two cores) behind the edge (rate limit 50/s,
        bursts of 200, per address). A user registered from 127.0.0.2 logs in again and again, one login at a time, for
        \(format(seconds)) s; in every other such run \(Self.floodThreads) threads from 127.0.0.1 register new accounts as
        fast as they are answered. 3 rounds, alternating.

        \(sections.joined(separator: "\n\n"))

        Target: the other user's logins answer 200 with p99 ≤ 3 s while one address floods. This run: p99 during the
        flood \(ms(figures[1])) ms with the budget (\(figures[1] <= 3_000 && figures[2] == 0 ? "met" : "not met")), \(ms(figures[4])) ms
        without it (\(figures[4] <= 3_000 && figures[5] == 0 ? "met" : "not met")). Over every run of this build:
        \(log.headline(1, unit: " ms")) with the budget, \(log.headline(4, unit: " ms")) without.
        """
    }

    /// One user's logins, one after another, for `seconds`: each one's latency, and the statuses that were not 200.
    private func logins(_ client: EdgeClient, seconds: Double) -> Round {
        var round = Round()
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let started = Date()
            let status = (try? client.post("/v1/auth/login", ["login": "victim@example.org", "password": "victim password"]))?.status ?? 0
            round.latencies.append(Date().timeIntervalSince(started) * 1000)
            if status != 200 { round.failures.append(status) }
        }
        return round
    }

    /// Runs `measure` while `floodThreads` threads from 127.0.0.1 register accounts.
    private func flood(port: Int, round: Int, _ measure: () -> Round) -> Round {
        let stop = Atomic<Bool>(false), created = Atomic<Int>(0), refused = Atomic<Int>(0)
        let client = EdgeClient(port: port).from("127.0.0.1")
        let threads = (0..<Self.floodThreads).map { thread in
            let worker = Thread {
                var number = 0
                while !stop.load(ordering: .relaxed) {
                    number += 1
                    let body: JSONObject = ["email": .string("flood-\(round)-\(thread)-\(number)@example.org"), "password": "flood password"]
                    let status = (try? client.post("/v1/auth/register", body))?.status ?? 0
                    if status == 201 { created.add(1, ordering: .relaxed) } else { refused.add(1, ordering: .relaxed) }
                }
            }
            worker.start()
            return worker
        }
        // The flood is under way, its first hashes queued, before the logins start.
        Thread.sleep(forTimeInterval: 1)
        var result = measure()
        stop.store(true, ordering: .relaxed)
        while threads.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.05) }
        result.created = created.load(ordering: .relaxed)
        result.refused = refused.load(ordering: .relaxed)
        return result
    }

    private func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }

    private func ms(_ value: Double) -> String { format(value, 0) }
}
