import Contracts
import EdgeFixtures
import Foundation
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Synchronization
import Wire

/// The catalogue issue's figures: acknowledged creates per second beside a raw
/// echo, and the import of the benchmark dataset.
struct CatalogueBenchmark {
    var seconds: Double
    var directory: URL
    /// Where `gen_dataset.py` wrote `posts.tsv`; nil skips the import.
    var dataset: URL?
    var report: BenchmarkReport

    func run() throws -> String {
        let stack = try BenchStack(directory: directory, services: ["auth", "catalogue"])
        defer { stack.stop() }
        let token = try stack.register("provider@example.org").accessToken
        let catalogueEndpoint = stack.endpoint("catalogue")

        // 1. Creates from 4 clients, each with its own request ids, beside the echo.
        let create = { @Sendable (client: Int, sequence: Int, round: Int) -> Data in
            let body = JSONObject([("kind", .string("offer")), ("title", .string("Bike \(client)-\(sequence)")),
                                   ("text", .string("Good as new.")), ("lat", .number(.double(52.09 + Double(sequence % 1000) / 10_000))),
                                   ("lon", .number(.double(5.12))), ("tags", .array([.string("bike"), .string("used")]))])
            return RequestEnvelope.encode(id: "c\(round)-\(client)-\(sequence)", op: CatalogueAPI.create.name, token: token, body: .object(body))
        }
        let sample = try ServiceClient(service: "catalogue", endpoint: catalogueEndpoint, timeout: 10, tries: 1)
            .exchange([create(9, 0, 9)])?.first ?? Data()
        let echo = try stack.echo(replyBytes: sample.count)
        let okPrefix = Data(#""ok":true"#.utf8)
        var rounds: [(echo: LoadResult, create: LoadResult)] = []
        for round in 0..<3 {
            let echoResult = LoadGenerator.run(endpoint: echo, clients: 4, seconds: seconds,
                                               request: { client, sequence in [create(client, sequence, round)] },
                                               check: { $0.count == sample.count })
            let createResult = LoadGenerator.run(endpoint: catalogueEndpoint, clients: 4, seconds: seconds,
                                                 request: { client, sequence in [create(client, sequence, round)] },
                                                 check: { $0.range(of: okPrefix) != nil })
            rounds.append((echoResult, createResult))
        }
        var rows = ""
        var ratios: [Double] = []
        for (index, round) in rounds.enumerated() {
            ratios.append(round.create.rate / round.echo.rate)
            rows += "| \(index + 1) | \(format(round.echo.rate)) | \(format(round.create.rate)) | \(format(ratios.last! * 100, 1)) % "
                + "| \(format(round.create.percentile(0.5), 2)) / \(format(round.create.percentile(0.99), 2)) | \(round.create.errors + round.echo.errors) |\n"
        }
        let medianCreates = Statistics.median(rounds.map(\.create.rate))

        // 2. The dataset, in batches of 1,000, as fast as catalogue takes them.
        let imported = try dataset.map { try importDataset($0, token: token, endpoint: catalogueEndpoint, stack: stack) }
        let log = try report.record("catalogue", columns: ["creates/s", "create p99 ms", "echo req/s", "import s"],
                                    values: [medianCreates, Statistics.median(rounds.map { $0.create.percentile(0.99) }),
                                             Statistics.median(rounds.map(\.echo.rate)), imported?.seconds ?? .nan], digits: 1)
        var section = """
        ## Catalogue: creates and the dataset import

        \(Machine.measured(with: "`make bench`"))
        `auth-service` and `catalogue-service` run as separate processes, write rate limits off
        (`HEREABOUTS_RATE_LIMIT=0`, as the protocol allows for benchmarks), SQLite in WAL mode with
        `synchronous=NORMAL`.

        **Creates.** `catalogue.posts.create` from 4 concurrent clients, closed loop, \(format(seconds)) s per run,
        each request with its own id, beside a raw ZeroMQ ROUTER echo answering the same requests with replies
        of the same size (\(sample.count) bytes), alternating in the same run. Each create writes the post, its feed
        entry and its kept reply; creates that arrive together share one transaction (group commit: a batch of
        about four with four clients), so each acknowledged create is committed, though not in a transaction of
        its own. Target: ≥ 5,000 acknowledged creates/s.

        | round | echo req/s | creates/s | vs echo | create p50 / p99 ms | errors |
        |---|---|---|---|---|---|
        \(rows)
        This run's median: \(format(medianCreates)) creates/s. Over every run of this build in the log at the end
        of this page: \(log.headline(0, unit: " creates/s", digits: 0)) (target ≥ 5,000:
        \(log.median(0) >= 5000 ? "met" : "not met")).
        """
        if let imported {
            section += "\n\n" + imported.text + """


            Over every run of this build in the log: import \(log.headline(3, unit: " s", digits: 1)) (target ≤ 30 s:
            \(log.median(3) <= 30 ? "met" : "not met")).
            """
        }
        return section
    }

    private func importDataset(_ dataset: URL, token: String, endpoint: String, stack: BenchStack) throws -> (text: String, seconds: Double) {
        let posts = try DatasetPost.load(dataset)
        let client = ServiceClient(service: "catalogue", endpoint: endpoint, timeout: 60, tries: 1)
        defer { client.close() }
        // The creates above stay in the file: the import's own posts are the difference.
        let before = try client.call(CatalogueAPI.list, ListPostsRequest(kind: nil, limit: 1)).total
        let result = try DatasetImport.run(posts, token: token, endpoint: endpoint)
        let stored = try client.call(CatalogueAPI.list, ListPostsRequest(kind: nil, limit: 1)).total - before
        let databaseBytes = (try? FileManager.default.attributesOfItem(atPath: stack.directory.appendingPathComponent("catalogue.sqlite").path)[.size] as? Int) ?? 0
        let elapsed = result.seconds
        return ("""
        **Import.** The \(posts.count) posts of `../shared/bench/gen_dataset.py` (kind, title, point, its id as `ref`)
        through `catalogue.posts.import` in \(result.batches) batches of 1,000, two importers, each batch one
        transaction, into the same file after the creates above. Catalogue alone (nothing follows its feed).
        "Stored" counts the posts the import added (the list's total after it, less the total before it).

        | posts | batches | seconds | posts/s | stored | failed batches | catalogue.sqlite |
        |---|---|---|---|---|---|---|
        | \(posts.count) | \(result.batches) | \(format(elapsed, 1)) | \(format(Double(posts.count) / elapsed)) | \(stored) | \(result.failures) | \(format(Double(databaseBytes) / 1_048_576)) MiB |

        This run: \(format(elapsed, 1)) s\(result.failures == 0 && stored == posts.count ? "" : ", with failures or missing posts").
        """, elapsed)
    }
}

/// Service executables started as child processes on free ports, with one data directory.
final class BenchStack {
    let directory: URL
    private var processes: [ChildProcess] = []
    private var services: [String: ChildProcess] = [:]
    private var endpoints: [String: String] = [:]
    private var environment: [String: String] = [:]

    init(directory: URL, services: [String], environment extra: [String: String] = [:]) throws {
        self.directory = directory
        var environment = ["HEREABOUTS_DATA_DIR": directory.path, "HEREABOUTS_RATE_LIMIT": "0", "HEREABOUTS_LOG_LEVEL": "warning"]
        for service in ServiceEndpoints.services {
            let requests = try ChildProcess.freeEndpoint()
            endpoints[service] = requests
            environment[ServiceEndpoints.requestsVariable(service)] = requests
            environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
        }
        environment.merge(extra) { $1 }
        self.environment = environment
        // A service given as replicas (a list in `extra`) starts as its replica 0 here.
        for service in ServiceEndpoints.services {
            endpoints[service] = ServiceEndpoints.list(environment[ServiceEndpoints.requestsVariable(service)]!).first
        }
        for service in services { try start(service) }
    }

    /// Starts a service's executable and waits until it answers `health`.
    private func start(_ service: String, timeout: TimeInterval = 20, environment extra: [String: String] = [:]) throws {
        let process = try ChildProcess("\(service)-service", arguments: [], environment: environment.merging(extra) { $1 },
                                       log: directory.appendingPathComponent("\(service).log"))
        processes.append(process)
        services[service] = process
        guard waitUntilHealthy(service: service, endpoint: endpoints[service]!, timeout: timeout) else {
            throw ServiceError(code: .unavailable, message: "\(service) did not start: \(process.logText)")
        }
    }

    /// Starts replica `index` (> 0) of a service whose endpoints the environment lists,
    /// as `<service>-<index>`, and waits until it answers `health`; returns its endpoint.
    func startReplica(_ service: String, index: Int, timeout: TimeInterval = 120) throws -> String {
        let name = "\(service)-\(index)"
        let endpoint = ServiceEndpoints.list(environment[ServiceEndpoints.requestsVariable(service)]!)[index]
        let process = try ChildProcess("\(service)-service", arguments: [], environment: environment.merging(["HEREABOUTS_REPLICA": "\(index)"]) { $1 },
                                       log: directory.appendingPathComponent("\(name).log"))
        processes.append(process)
        services[name] = process
        guard waitUntilHealthy(service: service, endpoint: endpoint, timeout: timeout) else {
            throw ServiceError(code: .unavailable, message: "\(name) did not start: \(process.logText)")
        }
        return endpoint
    }

    /// Starts the edge in front of the services on a free port (rate limit off, unless
    /// `environment` says otherwise) and waits until it answers; returns the port.
    func startEdge(environment extra: [String: String] = [:]) throws -> Int {
        let port = Int(try Peers.freePort())
        let environment = self.environment.merging(["HEREABOUTS_EDGE_LISTEN": "127.0.0.1:\(port)", "HEREABOUTS_EDGE_RATE_LIMIT": "0"]) { $1 }
            .merging(extra) { $1 }
        let process = try ChildProcess("edge-service", arguments: [], environment: environment,
                                       log: directory.appendingPathComponent("edge.log"))
        processes.append(process)
        services["edge"] = process
        let client = EdgeClient(port: port)
        for _ in 0..<200 {
            if (try? client.get("/health/live"))?.status == 200 { return port }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw ServiceError(code: .unavailable, message: "the edge did not start: \(process.logText)")
    }

    /// A running process's id (a service, or "edge").
    func pid(_ service: String) -> Int32? { services[service]?.process.processIdentifier }

    /// Stops a service (SIGTERM, or SIGKILL when `killing`) and starts it again,
    /// with `environment` added to the stack's; returns the seconds from the start
    /// of its process until it answered `health`.
    /// Stops `service` (with SIGKILL when `killing`), runs `meanwhile`, and starts it
    /// again; the seconds from its start to its answering.
    func restart(_ service: String, killing: Bool = false, environment extra: [String: String] = [:],
                 meanwhile: () -> Void = {}) throws -> TimeInterval {
        if killing, let process = services[service]?.process, process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
        services[service]?.terminate()
        processes.removeAll { $0 === services[service] }
        meanwhile()
        let started = Date()
        try start(service, timeout: 120, environment: extra)
        return Date().timeIntervalSince(started)
    }

    /// A running service's resident memory, from /proc.
    func residentBytes(_ service: String) -> Int? {
        services[service].flatMap { ProcessCPU.residentBytes($0.process.processIdentifier) }
    }

    func endpoint(_ service: String) -> String { endpoints[service]! }

    /// A new account at this stack's auth, with the benchmarks' password.
    func register(_ email: String) throws -> SessionReply {
        let auth = ServiceClient(service: "auth", endpoint: endpoint("auth"), timeout: 60, tries: 1)
        defer { auth.close() }
        return try auth.call(AuthAPI.register, RegisterRequest(email: email, password: "bench password"))
    }

    /// A service's events endpoint (replica 0's, for a service run as replicas).
    func eventsEndpoint(_ service: String) -> String {
        ServiceEndpoints.list(environment[ServiceEndpoints.eventsVariable(service)]!).first!
    }

    /// Starts a raw echo server answering with `replyBytes`; returns its endpoint.
    func echo(replyBytes: Int) throws -> String {
        let endpoint = try ChildProcess.freeEndpoint()
        processes.append(try ChildProcess("hereabouts-bench", arguments: ["echo-server", "--endpoint", endpoint, "--reply-bytes", "\(replyBytes)"],
                                          log: directory.appendingPathComponent("echo-\(replyBytes).log")))
        Thread.sleep(forTimeInterval: 0.3)
        return endpoint
    }

    func stop() {
        for process in processes.reversed() { process.terminate() }
        processes.removeAll()
    }
}
