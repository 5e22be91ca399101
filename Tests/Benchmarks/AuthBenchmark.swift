import Contracts
import Foundation
import Synchronization
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Wire

/// The foundation issue's two figures: runtime overhead against a raw ROUTER echo,
/// and `auth.health` latency during a login storm.
struct AuthBenchmark {
    var seconds: Double
    var directory: URL
    var report: BenchmarkReport

    func run() throws -> String {
        let authEndpoint = try ChildProcess.freeEndpoint()
        let echoEndpoint = try ChildProcess.freeEndpoint()
        let auth = try ChildProcess("auth-service",
                                    arguments: ["--endpoint", authEndpoint, "--events", try ChildProcess.freeEndpoint(),
                                                "--data-dir", directory.path, "--log-level", "warning"],
                                    log: directory.appendingPathComponent("auth.log"))
        defer { auth.terminate() }
        guard waitUntilHealthy(service: "auth", endpoint: authEndpoint) else {
            throw ServiceError(code: .unavailable, message: "auth did not start: \(auth.logText)")
        }
        let client = ServiceClient(service: "auth", endpoint: authEndpoint, timeout: 60, tries: 1)
        defer { client.close() }
        let session = try client.call(AuthAPI.register, RegisterRequest(email: "bench@example.org", password: "bench password",
                                                                      displayName: "Bench Mark",
                                                                      attributes: ["dives": .number(120), "certification": .string("PADI AOW")]))
        let user = session.user

        // 1. auth.users.get for one id, 4 clients, beside a raw echo of the same sizes.
        let request = RequestEnvelope.encode(id: "bench-1", op: AuthAPI.usersGet.name, token: nil,
                                             body: .object(JSONObject([("ids", .array([.string(user.id)]))])))
        let sample = try client.exchange([request])?.first ?? Data()
        let echo = try ChildProcess("hereabouts-bench", arguments: ["echo-server", "--endpoint", echoEndpoint, "--reply-bytes", "\(sample.count)"],
                                    log: directory.appendingPathComponent("echo.log"))
        defer { echo.terminate() }
        Thread.sleep(forTimeInterval: 0.3)
        let okPrefix = Data(#"{"v":1,"id":"bench-1","ok":true"#.utf8)
        // A request that does real work: a token, a worker, two SQLite reads.
        let me = RequestEnvelope.encode(id: "bench-1", op: AuthAPI.me.name, token: session.accessToken, body: .object(JSONObject()))
        var rounds: [(echo: LoadResult, auth: LoadResult, me: LoadResult)] = []
        for _ in 0..<3 {
            let echoResult = LoadGenerator.run(endpoint: echoEndpoint, clients: 4, seconds: seconds, request: { _, _ in [request] },
                                               check: { $0.count == sample.count })
            let authResult = LoadGenerator.run(endpoint: authEndpoint, clients: 4, seconds: seconds, request: { _, _ in [request] },
                                               check: { $0.starts(with: okPrefix) })
            let meResult = LoadGenerator.run(endpoint: authEndpoint, clients: 4, seconds: seconds, request: { _, _ in [me] },
                                             check: { $0.starts(with: okPrefix) })
            rounds.append((echoResult, authResult, meResult))
        }

        // 2. auth.health while 8 clients log in without pause, each login with a request id
        // of its own (a repeated id would be answered from the kept session, with no hashing).
        let loginBody = JSONValue.object(JSONObject([("login", .string("bench@example.org")), ("password", .string("bench password"))]))
        let health = RequestEnvelope.encode(id: "health", op: AuthAPI.health.name, token: nil, body: .object(JSONObject()))
        let stormSeconds = max(10, seconds * 2)
        let logins = LoginStorm(endpoint: authEndpoint, clients: 8) { client, number in
            RequestEnvelope.encode(id: "storm-\(client)-\(number)", op: AuthAPI.login.name, token: nil, body: loginBody)
        }
        logins.start()
        Thread.sleep(forTimeInterval: 2)
        let healthResult = Pacer.run(endpoint: authEndpoint, perSecond: 50, seconds: stormSeconds, request: health)
        // 3. SIGTERM while the logins still hash and queue: the worst moment to stop.
        logins.markStop()
        let exitSeconds = auth.terminate()
        let exitStatus = auth.process.terminationStatus
        let storm = logins.stop()

        var rows = ""
        for (index, round) in rounds.enumerated() {
            rows += "| \(index + 1) | \(format(round.echo.rate)) | \(format(round.auth.rate)) (\(format(round.auth.rate / round.echo.rate * 100, 1)) %) "
                + "| \(format(round.auth.percentile(0.5), 2)) / \(format(round.auth.percentile(0.99), 2)) "
                + "| \(format(round.me.rate)) (\(format(round.me.rate / round.echo.rate * 100, 1)) %) "
                + "| \(format(round.me.percentile(0.5), 2)) / \(format(round.me.percentile(0.99), 2)) "
                + "| \(round.auth.errors + round.echo.errors + round.me.errors) |\n"
        }
        let usersGetRatio = Statistics.median(rounds.map { $0.auth.rate / $0.echo.rate }) * 100
        let meRatio = Statistics.median(rounds.map { $0.me.rate / $0.echo.rate }) * 100
        let p99 = healthResult.percentile(0.99)
        let loginRate = Double(storm.before.ok) / (stormSeconds + 2)
        let log = try report.record("foundation", columns: ["users.get % of echo", "auth.me % of echo", "health p99 ms",
                                                            "logins/s", "stop ms"],
                                    values: [usersGetRatio, meRatio, p99, loginRate, exitSeconds * 1000], digits: 1)
        let unanswered = storm.inFlightAtStop - storm.afterStop.answered
        return """
        ## Foundation: runtime overhead and health under a login storm

        \(Machine.measured(with: "`make bench` (`hereabouts-bench all`)")) Client and servers share the machine's cores.

        **Runtime overhead.** From 4 concurrent REQ clients, closed loop, \(format(seconds)) s per run, against a raw
        ZeroMQ ROUTER echo (one thread, no work) answering the same request with a reply of the same size
        (\(sample.count) bytes), alternating in the same run: `auth.users.get` for one id, which the front thread answers
        from auth's profile cache (Docs/ARCHITECTURE.md), and `auth.me` with a token, which does a request's real
        work: the token verified, the job handed to a worker, the session checked and the user read from SQLite.
        Target: `auth.users.get` ≥ 50 % of the echo rate.

        | round | echo req/s | auth.users.get req/s (vs echo) | users.get p50 / p99 ms | auth.me req/s (vs echo) | auth.me p50 / p99 ms | errors |
        |---|---|---|---|---|---|---|
        \(rows)
        Median of this run's rounds: `auth.users.get` **\(format(usersGetRatio, 1)) %** of the echo (target ≥ 50 %:
        \(usersGetRatio >= 50 ? "met" : "not met")); `auth.me` **\(format(meRatio, 1)) %**. Over every run in the log below:
        `auth.users.get` \(log.headline(0, unit: " %")).

        **Health during a login storm.** 8 clients call `auth.login` (scrypt N=2^17, r=8, p=1, the right password,
        each request with an id of its own) without pause while one client calls `auth.health` 50 times a second for
        \(format(stormSeconds)) s. auth runs \(max(1, ProcessInfo.processInfo.activeProcessorCount / 2)) hashing thread(s) (one per
        two cores). Logins until the stop: \(storm.before.ok) answered with a session (\(format(loginRate, 1))/s),
        \(storm.before.rateLimited) refused with `rate_limited` (the hashing queue's bound), \(storm.before.other) with
        another error, \(storm.before.unanswered) unanswered.

        | health calls | p50 ms | p99 ms | max ms | errors |
        |---|---|---|---|---|
        | \(healthResult.latencies.count) | \(format(healthResult.percentile(0.5), 2)) | \(format(p99, 2)) | \(format(healthResult.latencies.max() ?? .nan, 2)) | \(healthResult.errors) |

        Target p99 ≤ 5 ms: \(p99 <= 5 ? "met" : "not met"); health errors: \(healthResult.errors).

        **Stopping.** SIGTERM was sent with \(storm.inFlightAtStop) logins sent and not yet answered. Of those,
        \(storm.afterStop.ok) were answered with a session, \(storm.afterStop.unavailable) with `unavailable`,
        \(storm.afterStop.other) with another error, and \(unanswered) got no answer before the process exited, with
        status \(exitStatus), **\(format(exitSeconds * 1000)) ms** after the signal (target ≤ 1 s:
        \(exitSeconds <= 1 ? "met" : "not met"); every login received before the signal answered: \(unanswered == 0 ? "yes" : "no")).

        Every run of this benchmark is in the run log at the end of this page (`logins/s` counts sessions).
        """
    }
}

/// Clients that log in back to back until stopped, each request with its own id;
/// what each request got back, counted by answer, apart for those sent before
/// `markStop` and answered (or not) after it.
final class LoginStorm: Sendable {
    struct Outcomes: Sendable {
        var ok = 0, rateLimited = 0, unavailable = 0, other = 0, unanswered = 0
        var answered: Int { ok + rateLimited + unavailable + other }
    }

    struct Result: Sendable {
        /// Requests answered (or given up on) before the stop was marked.
        var before: Outcomes
        /// Requests sent before the stop and settled after it.
        var afterStop: Outcomes
        var inFlightAtStop: Int
    }

    private let endpoint: String
    private let clients: Int
    private let request: @Sendable (_ client: Int, _ number: Int) -> Data
    private let stopped = Atomic<Bool>(false)
    private let stopMarkedAt = Mutex<Date?>(nil)
    private let counts = Mutex(Result(before: Outcomes(), afterStop: Outcomes(), inFlightAtStop: 0))
    private let threads = Mutex<[ServiceThread]>([])

    init(endpoint: String, clients: Int, request: @escaping @Sendable (Int, Int) -> Data) {
        self.endpoint = endpoint
        self.clients = clients
        self.request = request
    }

    func start() {
        let started = (0..<clients).map { index in
            ServiceThread(name: "storm-\(index)") { [self] in
                let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 10, tries: 1)
                defer { client.close() }
                var number = 0
                while !stopped.load(ordering: .relaxed) {
                    number += 1
                    let sentAt = Date()
                    let reply = try? client.exchange([request(index, number)])
                    let code = reply.flatMap { $0.first }.map { frame -> String in
                        if case .failure(let error) = ReplyEnvelope.decode(frame).result { return error.code.rawValue }
                        return "ok"
                    }
                    counts.withLock { counts in
                        let mark = stopMarkedAt.withLock { $0 }
                        // A request sent after the stop is not one the service had received.
                        if let mark, sentAt > mark { return }
                        let settledAfterStop = mark != nil
                        func add(_ outcomes: inout Outcomes) {
                            switch code {
                            case "ok": outcomes.ok += 1
                            case "rate_limited": outcomes.rateLimited += 1
                            case "unavailable": outcomes.unavailable += 1
                            case nil: outcomes.unanswered += 1
                            default: outcomes.other += 1
                            }
                        }
                        if settledAfterStop { add(&counts.afterStop) } else { add(&counts.before) }
                    }
                }
            }
        }
        threads.withLock { $0 = started }
    }

    /// From now on, requests are settling after a stop: counted apart.
    func markStop() {
        counts.withLock { counts in
            stopMarkedAt.withLock { $0 = Date() }
            // Each client has exactly one request out while the storm runs.
            counts.inFlightAtStop = clients
        }
    }

    /// Stops the clients (each finishes its login in flight) and returns what they got.
    func stop() -> Result {
        stopped.store(true, ordering: .relaxed)
        threads.withLock { $0 }.forEach { $0.join() }
        return counts.withLock { $0 }
    }
}

/// One client sending at a fixed rate, measuring each reply's latency.
enum Pacer {
    static func run(endpoint: String, perSecond: Double, seconds: Double, request: Data) -> LoadResult {
        let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 5, tries: 1)
        defer { client.close() }
        var result = LoadResult(requests: 0, errors: 0, seconds: seconds, latencies: [])
        let interval = 1 / perSecond
        let start = Date()
        var next = start
        while Date().timeIntervalSince(start) < seconds {
            let sent = Date()
            if (try? client.exchange([request])) != nil {
                result.requests += 1
                result.latencies.append(Date().timeIntervalSince(sent) * 1000)
            } else {
                result.errors += 1
            }
            next = next.addingTimeInterval(interval)
            let wait = next.timeIntervalSinceNow
            if wait > 0 { Thread.sleep(forTimeInterval: wait) }
        }
        return result
    }
}
