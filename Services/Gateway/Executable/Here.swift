import ArgumentParser
import Contracts
import Foundation
import Gateway
import ServiceClient
import ZeroMQ
import Wire
#if canImport(Glibc)
import Glibc
#endif

@main
struct Here: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "here",
        abstract: "Hereabouts from the terminal: run the stack, and every app's flow.",
        discussion: """
            Services are found at the endpoints HEREABOUTS_<SVC>_ENDPOINT name (default tcp://127.0.0.1:7101…7105).
            Exit codes: 0 ok, 1 your mistake, 2 a service unavailable, 3 internal.
            """,
        subcommands: [Up.self, Status.self, Call.self, Register.self, Login.self, Logout.self, Whoami.self, Anon.self,
                      Profile.self, LocationCommand.self, PostCommand.self, Rate.self, Search.self, Nearest.self, PlaceCommand.self,
                      CountryCommand.self, Divers.self, Fav.self, Chat.self, Fence.self, TripCommand.self, Tip.self, Within.self, Password.self, Account.self, Keys.self,
                      Errors.self])
}

/// Options every command takes.
struct CommonOptions: ParsableArguments {
    @Flag(help: "Print the result as one JSON document.")
    var json = false
}

/// A command's confirmation: the op's reply body with `--json`, a line otherwise.
func confirm(_ options: CommonOptions, _ reply: some Encodable, _ line: String) throws {
    if options.json { try Output.json(reply) } else { print(line) }
}

/// A command that talks to the services: errors print to stderr and exit with the
/// protocol's code mapped to 1, 2 or 3.
protocol GatewayCommand: ParsableCommand {
    func execute(_ gateway: Gateway) throws
}

extension GatewayCommand {
    func run() throws {
        do {
            try execute(Gateway())
        } catch let error as ExitCode {
            throw error
        } catch {
            let failure = GatewayError.from(error)
            FileHandle.standardError.write(Data("here: \(failure.message)\n".utf8))
            ErrorLog().record(command: CommandLine.arguments.dropFirst().joined(separator: " "), failure)
            throw ExitCode(failure.exitCode)
        }
    }
}

struct Errors: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The last 50 errors here met, oldest first.")
    @OptionGroup var options: CommonOptions

    func run() throws {
        let entries = ErrorLog().entries()
        if options.json { return try Output.json(entries) }
        if entries.isEmpty { return print("no errors recorded") }
        Output.table(["TIME", "EXIT", "COMMAND", "MESSAGE"], entries.map {
            [Timestamp.format($0.at), "\($0.exitCode)", "here \($0.command)", $0.message]
        })
    }
}

// MARK: Running the stack

struct Up: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Start the five services and keep them running; Ctrl-C stops them.",
        discussion: "Each service's log is <data dir>/logs/<service>.log. A service that exits is restarted after 1, 2, 4 … 30 s.")

    @Option(help: "The data directory (default: HEREABOUTS_DATA_DIR, else ~/.local/share/hereabouts).")
    var data: String?

    @Flag(help: "On a first start (no data yet), add demo accounts and posts.")
    var demo = false

    @Flag(help: "Run without CurveZMQ (by default the services admit only the keys in <data dir>/keys, made on first start).")
    var plaintext = false

    @Option(help: "The longest wait, in seconds, before restarting a service that keeps dying (it doubles from 1 s).")
    var maxBackoff: Double = 30

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
        var configuration = Supervisor.Configuration(services: ServiceEndpoints.services, executables: Self.executables(environment),
                                                     dataDirectory: directory, environment: childEnvironment)
        configuration.maxBackoff = max(0, maxBackoff)
        let supervisor = Supervisor(configuration) { [json = options.json] in Self.say($0, json: json) }
        // Signals arrive here, and the services (in their own process groups) are stopped in order.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        do {
            try supervisor.start()
        } catch {
            let failure = GatewayError.from(error)
            FileHandle.standardError.write(Data("here: \(failure.message)\n".utf8))
            throw ExitCode(failure.exitCode)
        }
        if demo && firstStart {
            do {
                for line in try DemoData.seed(Gateway(environment: childEnvironment)) { Self.say("demo data: \(line)", json: options.json) }
            } catch {
                Self.say("demo data could not be added: \(GatewayError.from(error).message)", json: options.json)
            }
        }
        let security = plaintext || childEnvironment[KeyRing.environmentVariable]?.isEmpty != false
            ? "plaintext" : "CurveZMQ, keys in \(childEnvironment[KeyRing.environmentVariable]!)"
        Self.say("all services ready (\(security)); data in \(directory.path); Ctrl-C stops them", json: options.json)
        stop.wait()
        supervisor.stop()
        sources.forEach { $0.cancel() }
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
        abstract: "Each service's health (it answers), readiness (its file takes writes, it keeps up with its feeds), version and round-trip time.",
        discussion: "Exits with 2 when a service does not answer or is not ready.")
    @OptionGroup var options: CommonOptions

    struct Row: Encodable {
        var service: String
        var endpoint: String
        var status: String
        var version: String?
        var milliseconds: Double?
        var ready: ReadyReply?
    }

    func execute(_ gateway: Gateway) throws {
        var rows: [Row] = []
        for service in ServiceEndpoints.services {
            // One short try each: a service that does not answer within a second is reported, not waited for.
            let client = ServiceClient(service: service, endpoint: gateway.endpoint(of: service), timeout: 1, tries: 1,
                                       curve: try gateway.curve(of: service))
            defer { client.close() }
            let started = Date()
            let reply = try? client.call(HealthAPI.health(service), Empty())
            let elapsed = (Date().timeIntervalSince(started) * 10_000).rounded() / 10
            let ready = reply == nil ? nil : try? client.call(HealthAPI.ready(service), Empty())
            rows.append(Row(service: service, endpoint: gateway.endpoint(of: service), status: reply?.status ?? "unavailable",
                            version: reply?.version, milliseconds: reply == nil ? nil : elapsed, ready: ready))
        }
        if options.json {
            try Output.json(rows)
        } else {
            Output.table(["SERVICE", "ENDPOINT", "STATUS", "READY", "VERSION", "RTT"],
                         rows.map { [$0.service, $0.endpoint, $0.status, Self.readiness($0), $0.version ?? "-",
                                     $0.milliseconds.map { "\($0) ms" } ?? "-"] })
        }
        if rows.contains(where: { $0.status != "ok" || $0.ready?.ready != true }) { throw ExitCode(2) }
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
        return "no (" + problems.joined(separator: "; ") + ")"
    }
}

struct Call: GatewayCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send one request and print the reply's body (for debugging any service).",
        discussion: "Example: here call geo.places.search '{\"q\":\"Utrecht\",\"limit\":1}'. The session's token goes along when signed in.")

    @OptionGroup var options: CommonOptions  // the reply is always printed as JSON
    @Argument(help: "The op, e.g. geo.search.") var op: String
    @Argument(help: "The body, a JSON object (default {}).") var body: String = "{}"
    @Flag(help: "Send no token even when signed in.") var anonymous = false

    func execute(_ gateway: Gateway) throws {
        guard case .object(let object)? = try? JSONParser.parse(Data(body.utf8)) else {
            throw GatewayError("the body must be a JSON object")
        }
        Output.json(try gateway.callRaw(op: op, body: .object(object), token: anonymous ? .none : .ifSignedIn))
    }
}

struct Keys: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "CurveZMQ keys.", subcommands: [KeysGenerate.self])
}

struct KeysGenerate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "generate", abstract: "Write a key pair per component (auth, catalogue, geo, favourites, chat, here) into DIR.",
        discussion: "<component>.key holds the Z85 public key, <component>.secret the secret key (mode 0600). Existing pairs are kept. Point HEREABOUTS_KEYS_DIR at DIR.")
    @Argument var directory: String

    func run() throws {
        try KeyRing.generate(into: URL(fileURLWithPath: directory))
        print("Keys in \(directory): " + KeyRing.components.map { "\($0).key" }.joined(separator: ", "))
    }
}
