import ArgumentParser
import Contracts
import Foundation
import Gateway
import ServiceClient
import Wire
import ZeroMQ
#if canImport(Glibc)
import Glibc
#endif

struct Up: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the five services and the edge, and keep them running; Ctrl-C stops them.",
        discussion: """
            Each one's log is <data dir>/logs/<service>.log. One that exits is restarted after 1, 2, 4 … 30 s. \
            The edge (HTTP and WebSocket for apps) listens on --http, by default HEREABOUTS_EDGE_LISTEN, else 127.0.0.1:8080.
            """)

    @Option(help: "The data directory (default: HEREABOUTS_DATA_DIR, else ~/.local/share/hereabouts).")
    var data: String?

    @Flag(help: "On a first start (no data yet), add demo accounts and posts.")
    var demo = false

    @Flag(help: "Run without CurveZMQ (by default the services admit only the keys in <data dir>/keys, made on first start).")
    var plaintext = false

    @Option(help: "The longest wait, in seconds, before restarting a service that keeps dying (it doubles from 1 s).")
    var maxBackoff: Double = 30

    @Option(help: "How long, in seconds, each service and then the edge may take to answer at start before here up gives up and says why.")
    var startTimeout: Double = 60

    @Option(help: "host:port for the edge's HTTP (default: HEREABOUTS_EDGE_LISTEN, else 127.0.0.1:8080).")
    var http: String?

    @Flag(help: "Leave the edge out: the services only.")
    var noHttp = false

    @Option(help: ArgumentHelp("Run geo as N processes, each with its own file, all following the same feeds; searches go round them.",
                               discussion: "HEREABOUTS_GEO_ENDPOINT and HEREABOUTS_GEO_EVENTS may list the N endpoints (comma-separated); else replica k > 0 takes ports 7313+10k and 7413+10k."))
    var geoReplicas = 1

    @OptionGroup var options: CommonOptions

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        let directory = data.map { URL(fileURLWithPath: $0) } ?? Gateway.dataDirectory(environment)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let firstStart = !FileManager.default.fileExists(atPath: directory.appendingPathComponent("auth.sqlite").path)
        var childEnvironment = environment
        childEnvironment["HEREABOUTS_DATA_DIR"] = directory.path
        if plaintext {
            childEnvironment[KeyRing.environmentVariable] = ""
        } else if (environment[KeyRing.environmentVariable] ?? "").isEmpty {
            let keys = directory.appendingPathComponent("keys")
            try KeyRing.generate(into: keys)
            childEnvironment[KeyRing.environmentVariable] = keys.path
        }
        let demoMarker = directory.appendingPathComponent(DemoData.markerFile)
        guard (1...16).contains(geoReplicas) else {
            FileHandle.standardError.write(Data("here: --geo-replicas must be from 1 to 16, not \(geoReplicas)\n".utf8))
            throw ExitCode(2)
        }
        do {
            try Self.listReplicas(of: GeoAPI.service, count: geoReplicas, in: &childEnvironment)
        } catch {
            FileHandle.standardError.write(Data("here: \(GatewayError.from(error).message)\n".utf8))
            throw ExitCode(2)
        }
        let edgeListen = noHttp ? nil : EdgeAddress.listen(http, environment: environment)
        // Account mail links to the console at this edge unless HEREABOUTS_PUBLIC_URL says otherwise.
        if let edgeListen, (environment["HEREABOUTS_PUBLIC_URL"] ?? "").isEmpty {
            childEnvironment["HEREABOUTS_PUBLIC_URL"] = "http://" + (edgeListen.hasPrefix("0.0.0.0:") ? "127.0.0.1" + edgeListen.dropFirst(7) : edgeListen)
        }
        // A demo keeps its mail (no relay): the console may show a mail's link in place of the mailbox.
        if demo, (environment["HEREABOUTS_SMTP_URL"] ?? "").isEmpty, environment["HEREABOUTS_MAIL_SHOW_LINKS"] == nil {
            childEnvironment["HEREABOUTS_MAIL_SHOW_LINKS"] = "1"
        }
        var configuration = Supervisor.Configuration(services: ServiceEndpoints.services, executables: Self.executables(environment),
                                                     dataDirectory: directory, environment: childEnvironment)
        configuration.replicas = [GeoAPI.service: geoReplicas]
        configuration.maxBackoff = max(0, maxBackoff)
        configuration.startTimeout = max(1, startTimeout)
        configuration.edgeListen = edgeListen
        let supervisor = Supervisor(configuration) { [json = options.json] in Self.say($0, json: json) }
        // Signals arrive here, and the services (in their own process groups) are stopped in order.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            // Stopping works during start-up too: start() then throws Stopped.
            source.setEventHandler {
                stop.signal()
                supervisor.stop()
            }
            source.resume()
            return source
        }
        do {
            try supervisor.startServices()
            // The demo is seeded before the edge starts, so that the edge is told its
            // operator: the demo's operator account, by the id the marker keeps, unless
            // the operators are named.
            if demo && firstStart {
                do {
                    let seeded = try DemoData.seed(Gateway(environment: childEnvironment))
                    for line in seeded.lines { Self.say("demo data: \(line)", json: options.json) }
                    try Data("\(seeded.operatorId)\n".utf8).write(to: demoMarker)
                } catch {
                    Self.say("demo data could not be added: \(GatewayError.from(error).message)", json: options.json)
                }
            }
            var edgeEnvironment: [String: String] = [:]
            if (environment["HEREABOUTS_EDGE_OPERATORS"] ?? "").isEmpty, let operatorId = DemoData.operatorId(marker: demoMarker) {
                edgeEnvironment["HEREABOUTS_EDGE_OPERATORS"] = operatorId
            }
            try supervisor.startEdge(environment: edgeEnvironment)
        } catch is Supervisor.Stopped {
            supervisor.stop()
            return
        } catch {
            let failure = GatewayError.from(error)
            FileHandle.standardError.write(Data("here: \(failure.message)\n".utf8))
            throw ExitCode(failure.exitCode)
        }
        let security = plaintext || childEnvironment[KeyRing.environmentVariable]?.isEmpty != false
            ? "plaintext" : "CurveZMQ, keys in \(childEnvironment[KeyRing.environmentVariable]!)"
        Self.say("all services ready (\(security)); data in \(directory.path); Ctrl-C stops them", json: options.json)
        if let listen = configuration.edgeListen { Self.say("apps and browsers: http://\(listen)", json: options.json) }
        stop.wait()
        supervisor.stop()
        sources.forEach { $0.cancel() }
    }

    /// Puts the endpoints of `count` replicas of `service` into its two variables: those
    /// they list already, else the defaults (`ServiceEndpoints.defaultReplica`).
    static func listReplicas(of service: String, count: Int, in environment: inout [String: String]) throws {
        guard count > 1 else { return }
        for (variable, events) in [(ServiceEndpoints.requestsVariable(service), false), (ServiceEndpoints.eventsVariable(service), true)] {
            let given = ServiceEndpoints.list(environment[variable] ?? "")
            if !given.isEmpty {
                guard given.count >= count else {
                    throw GatewayError("\(variable) lists \(given.count) endpoint(s); --geo-replicas \(count) needs \(count), comma-separated (or unset it for the defaults)")
                }
                continue
            }
            environment[variable] = (0..<count).compactMap { replica in
                let defaults = ServiceEndpoints.defaultReplica(service, index: replica)
                return events ? defaults.events : defaults.requests
            }.joined(separator: ",")
        }
    }

    /// One line at once, unbuffered: `here up` is often watched through a pipe or a log file.
    /// With `--json`, each is `{"message": …}` on a line of its own.
    static func say(_ line: String, json: Bool) {
        let text = json ? String(decoding: JSONWriter.data(.object(JSONObject([("message", .string(line))]))), as: UTF8.self) : line
        FileHandle.standardOutput.write(Data((text + "\n").utf8))
    }

    /// The service executables: HEREABOUTS_BIN_DIR, else beside `here`.
    static func executables(_ environment: [String: String]) -> URL {
        if let directory = environment["HEREABOUTS_BIN_DIR"], !directory.isEmpty { return URL(fileURLWithPath: directory) }
        let own = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: own).deletingLastPathComponent()
    }
}

struct Status: GatewayCommand {
    static let configuration = CommandConfiguration(
        abstract: "Each service's health (it answers), readiness (its file takes writes, it keeps up with its feeds), version, round-trip time and free storage.",
        discussion: "Exits with 2 when a service does not answer or is not ready.")
    @OptionGroup var options: CommonOptions

    @Flag(help: "Leave the edge out (for a stack started with here up --no-http).")
    var noHttp = false

    struct Row: Encodable {
        var service: String
        var endpoint: String
        var status: String
        var version: String?
        var milliseconds: Double?
        var ready: ReadyReply?
        var storage: StorageUse?
        /// What the service sends and has not delivered yet: auth's mail, chat's pushes.
        var mail: MailQueueStatus?
        var push: PushQueueStatus?
    }

    func execute(_ gateway: Gateway) throws {
        var rows: [Row] = []
        for service in ServiceEndpoints.services {
            // A service run as replicas has a row per replica: geo, geo-1, …
            for (replica, endpoint) in ServiceEndpoints.list(gateway.endpoint(of: service)).enumerated() {
                // One short try each: a service that does not answer within a second is reported, not waited for.
                let client = ServiceClient(service: service, endpoint: endpoint, timeout: 1, tries: 1, curve: try gateway.curve(of: service))
                defer { client.close() }
                let started = Date()
                let reply = try? client.call(HealthAPI.health(service), Empty())
                let elapsed = (Date().timeIntervalSince(started) * 10_000).rounded() / 10
                let ready = reply == nil ? nil : try? client.call(HealthAPI.ready(service), Empty())
                rows.append(Row(service: ServiceEndpoints.replicaName(service, replica), endpoint: endpoint,
                                status: reply?.status ?? "unavailable", version: reply?.version,
                                milliseconds: reply == nil ? nil : elapsed, ready: ready, storage: reply?.storage,
                                mail: reply?.mail, push: reply?.push))
            }
        }
        if !noHttp {
            // The edge: alive on /health/live, ready on /health/ready (every service answers).
            let listen = EdgeAddress.listen(nil, environment: gateway.environment)
            let started = Date()
            let live = HTTPProbe.status(of: "/health/live", at: listen)
            let elapsed = (Date().timeIntervalSince(started) * 10_000).rounded() / 10
            let ready = live == nil ? nil : HTTPProbe.status(of: "/health/ready", at: listen, timeout: 3)
            rows.append(Row(service: Supervisor.edge, endpoint: "http://\(listen)", status: live == 200 ? "ok" : "unavailable",
                            version: nil, milliseconds: live == nil ? nil : elapsed,
                            ready: ready.map { ReadyReply(service: Supervisor.edge, ready: $0 == 200, database: nil, feeds: []) }))
        }
        if options.json {
            try Output.json(rows)
        } else {
            Output.table(["SERVICE", "ENDPOINT", "STATUS", "READY", "VERSION", "RTT", "FREE", "OUTBOX"],
                         rows.map { [$0.service, $0.endpoint, $0.status, Self.readiness($0), $0.version ?? "-",
                                     $0.milliseconds.map { "\($0) ms" } ?? "-", $0.storage.map(Self.free) ?? "-", Self.outbox($0)] })
        }
        if rows.contains(where: { $0.status != "ok" || $0.ready?.ready != true }) { throw ExitCode(2) }
    }

    /// `mail: 0 waiting, 3 failed today`, `push: 2 waiting, 1,204 sent, 0 failed`; `-` for a service that sends neither.
    static func outbox(_ row: Row) -> String {
        if let mail = row.mail {
            return "mail: \(mail.pending) waiting, \(mail.sentLastDay) sent and \(mail.failedLastDay) failed today"
        }
        if let push = row.push {
            return "push: \(push.pending) waiting, \(push.sent) sent, \(push.failed) failed, \(push.removed) devices gone"
        }
        return "-"
    }

    /// The storage's free bytes, and the file's size: `12.3 GiB (file 41 MiB)`.
    static func free(_ storage: StorageUse) -> String {
        let format = ByteCountFormatter()
        format.countStyle = .binary
        return "\(format.string(fromByteCount: storage.freeBytes)) (file \(format.string(fromByteCount: storage.fileBytes)))"
    }

    /// `yes`, or what keeps the service from being ready.
    static func readiness(_ row: Row) -> String {
        guard let ready = row.ready else { return "-" }
        if ready.ready { return "yes" }
        var problems: [String] = []
        if let database = ready.database, !database.writable { problems.append("file: \(database.problem ?? "not writable")") }
        for feed in ready.feeds where !feed.ready {
            let silence = feed.secondsSinceCaughtUp.map { "last caught up \(Int($0)) s ago" } ?? "never caught up"
            problems.append("\(feed.feed) feed: \(feed.lag) behind, \(silence)")
        }
        return problems.isEmpty ? "no" : "no (" + problems.joined(separator: "; ") + ")"
    }
}

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "CurveZMQ keys.", subcommands: [KeysGenerate.self])
}

struct KeysGenerate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate", abstract: "Write a key pair per component (auth, catalogue, geo, favourites, chat, edge, here) into DIR.",
        discussion: "<component>.key holds the Z85 public key, <component>.secret the secret key (mode 0600). Existing pairs are kept. Point HEREABOUTS_KEYS_DIR at DIR.")
    @Argument var directory: String
    @Option(help: "UID[:GID] to own the directory and its pairs, for containers that run as another user (Compose's images: 10001).")
    var owner: String?

    func run() throws {
        var ids: (uid: UInt32, gid: UInt32)?
        if let owner {
            let parts = owner.split(separator: ":", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let uid = UInt32(parts[0]), let gid = parts.count == 2 ? UInt32(parts[1]) : uid else {
                throw ValidationError("--owner takes UID or UID:GID, numbers, not \(owner)")
            }
            ids = (uid, gid)
        }
        try KeyRing.generate(into: URL(fileURLWithPath: directory), owner: ids)
        print("Keys in \(directory): " + KeyRing.components.map { "\($0).key" }.joined(separator: ", "))
    }
}
