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
        // For context, not a target: an op on the worker lane with two SQLite reads.
        let me = RequestEnvelope.encode(id: "bench-1", op: AuthAPI.me.name, token: session.accessToken, body: .object(JSONObject()))
        var rounds: [(echo: LoadResult, auth: LoadResult, me: LoadResult)] = []
        for _ in 0..<3 {
            let echoResult = LoadGenerator.run(endpoint: echoEndpoint, clients: 4, seconds: seconds, request: { _, _ in [request] },
                                               check: { $0.count == sample.count })
            let authResult = LoadGenerator.run(endpoint: authEndpoint, clients: 4, seconds: seconds, request: { _, _ in [request] },
                                               check: { $0.starts(with: okPrefix) })
            let meResult = LoadGenerator.run(endpoint: authEndpoint, clients: 4, seconds: seconds / 2, request: { _, _ in [me] },
                                             check: { $0.starts(with: okPrefix) })
            rounds.append((echoResult, authResult, meResult))
        }

        // 2. auth.health while 8 clients log in without pause.
        let login = RequestEnvelope.encode(id: "storm", op: AuthAPI.login.name, token: nil,
                                           body: .object(JSONObject([("login", .string("bench@example.org")),
                                                                     ("password", .string("bench password"))])))
        let health = RequestEnvelope.encode(id: "health", op: AuthAPI.health.name, token: nil, body: .object(JSONObject()))
        let stormSeconds = max(10, seconds * 2)
        let logins = LoginStorm(endpoint: authEndpoint, clients: 8, request: login)
        logins.start()
        Thread.sleep(forTimeInterval: 2)
        let healthResult = Pacer.run(endpoint: authEndpoint, perSecond: 50, seconds: stormSeconds, request: health)
        // 3. SIGTERM while the logins still hash and queue: the worst moment to stop.
        let exitSeconds = auth.terminate()
        let exitStatus = auth.process.terminationStatus
        let loginCount = logins.stop()

        var rows = ""
        var ratios: [Double] = []
        for (index, round) in rounds.enumerated() {
            let ratio = round.auth.rate / round.echo.rate
            ratios.append(ratio)
            rows += "| \(index + 1) | \(format(round.echo.rate)) | \(format(round.auth.rate)) | \(format(ratio * 100, 1)) % "
                + "| \(format(round.auth.percentile(0.5), 2)) / \(format(round.auth.percentile(0.99), 2)) "
                + "| \(format(round.me.rate)) (\(format(round.me.rate / round.echo.rate * 100, 1)) %) "
                + "| \(round.auth.errors + round.echo.errors + round.me.errors) |\n"
        }
        let meanRatio = ratios.reduce(0, +) / Double(ratios.count)
        let p99 = healthResult.percentile(0.99)
        return """
        ## Foundation: runtime overhead and health under a login storm

        Measured \(Timestamp.format(Date())) with `make bench` (`hereabouts-bench all`), release build,
        on \(Machine.description). Client and servers share the machine's cores.

        **Runtime overhead.** `auth.users.get` for one id (reply \(sample.count) bytes) from 4 concurrent REQ
        clients, closed loop, \(format(seconds)) s per run, against a raw ZeroMQ ROUTER echo (one thread,
        no work) answering the same request with a reply of the same size, alternating in the same run.
        Target: auth ≥ 50 % of the echo rate. `auth.users.get` runs on the front lane and answers from
        auth's profile cache (Docs/ARCHITECTURE.md); for context, not a target, the table also gives
        `auth.me` with a token, which runs on a worker and reads SQLite twice (session check, user).

        | round | echo req/s | auth.users.get req/s | ratio | users.get p50 / p99 ms | auth.me req/s (vs echo) | errors |
        |---|---|---|---|---|---|---|
        \(rows)
        Mean ratio: **\(format(meanRatio * 100, 1)) %** (target ≥ 50 %: \(meanRatio >= 0.5 ? "met" : "not met")).

        **Health during a login storm.** 8 clients call `auth.login` (scrypt N=2^17, r=8, p=1) without pause
        while one client calls `auth.health` 50 times a second for \(format(stormSeconds)) s.
        auth runs \(ProcessInfo.processInfo.activeProcessorCount / 2 > 0 ? ProcessInfo.processInfo.activeProcessorCount / 2 : 1) hashing thread(s) (one per two cores); logins completed: \(loginCount)
        (\(format(Double(loginCount) / (stormSeconds + 2), 1))/s).

        | health calls | p50 ms | p99 ms | max ms | errors |
        |---|---|---|---|---|
        | \(healthResult.latencies.count) | \(format(healthResult.percentile(0.5), 2)) | \(format(p99, 2)) | \(format(healthResult.latencies.max() ?? .nan, 2)) | \(healthResult.errors) |

        Target p99 ≤ 5 ms: \(p99 <= 5 ? "met" : "not met").

        **Stopping.** SIGTERM sent while the 8 clients were still logging in (one login hashing, the rest
        queued): auth answered what it had received (queued logins with `unavailable`) and exited with
        status \(exitStatus) after **\(format(exitSeconds * 1000)) ms** (target ≤ 1 s: \(exitSeconds <= 1 ? "met" : "not met")).
        """
    }
}

/// Clients that call one op back to back until stopped.
final class LoginStorm: Sendable {
    private let endpoint: String
    private let clients: Int
    private let request: Data
    private let stopped = Atomic<Bool>(false)
    private let completed = Atomic<Int>(0)
    private let threads = Mutex<[ServiceThread]>([])

    init(endpoint: String, clients: Int, request: Data) {
        self.endpoint = endpoint
        self.clients = clients
        self.request = request
    }

    func start() {
        let started = (0..<clients).map { index in
            ServiceThread(name: "storm-\(index)") { [self] in
                let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 10, tries: 1)
                defer { client.close() }
                while !stopped.load(ordering: .relaxed) {
                    if (try? client.exchange([request])) != nil { completed.add(1, ordering: .relaxed) }
                }
            }
        }
        threads.withLock { $0 = started }
    }

    /// Stops the clients (each finishes its login in flight); returns how many completed.
    func stop() -> Int {
        stopped.store(true, ordering: .relaxed)
        threads.withLock { $0 }.forEach { $0.join() }
        return completed.load(ordering: .relaxed)
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
