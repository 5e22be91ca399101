import ArgumentParser
import Contracts
import Foundation
import ServiceClient
import ZeroMQ
import Logging

/// The flags every service executable takes. Each overrides the matching
/// `HEREABOUTS_*` variable, which overrides the default.
public struct ServiceOptions: ParsableArguments {
    @Option(help: "Where clients connect (default: HEREABOUTS_<SVC>_ENDPOINT, else the stack's port).")
    public var endpoint: String?

    @Option(help: "Where the PUB socket binds (default: HEREABOUTS_<SVC>_EVENTS, else the stack's port).")
    public var events: String?

    @Option(name: .customLong("data-dir"), help: "The directory of the SQLite files (default: HEREABOUTS_DATA_DIR, else ~/.local/share/hereabouts).")
    public var dataDirectory: String?

    @Option(help: "Worker threads answering requests (default: HEREABOUTS_WORKERS, else twice the number of cores, at least 4).")
    public var workers: Int?

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error or critical (default: HEREABOUTS_LOG_LEVEL, else info).")
    public var logLevel: String?

    @Option(help: "Which replica this process is, for a service run as several (default: HEREABOUTS_REPLICA, else 0): a number, or a name ending in one (a StatefulSet pod's).")
    public var replica: String?

    public init() {}

    /// The flags that were given, as plain values.
    public var overrides: ServiceSettings.Overrides {
        ServiceSettings.Overrides(endpoint: endpoint, events: events, dataDirectory: dataDirectory,
                                  workers: workers, logLevel: logLevel, replica: replica)
    }
}

/// A service's resolved settings: flags, then environment, then defaults.
public struct ServiceSettings: Sendable {
    public var service: String
    public var endpoint: String
    public var eventsEndpoint: String?
    public var dataDirectory: String
    /// Where the service makes the copies `here backup` takes (`HEREABOUTS_BACKUP_DIR`,
    /// else `<data dir>/backups`): a directory every service shares, as a volume each
    /// container mounts, lets `here` in one container take them all.
    public var backupDirectory: String
    public var workers: Int
    public var logLevel: Logger.Level
    /// Writes per second and burst per user (`HEREABOUTS_RATE_LIMIT`); nil when off.
    public var rateLimit: RateLimiter.Policy?
    /// The most the service's file may grow to (`HEREABOUTS_DATABASE_MAX_BYTES`:
    /// bytes, or with K, M or G); nil: the disk is the limit.
    public var databaseMaxBytes: Int64?
    /// The environment the settings were read from, for the endpoints of other services.
    public var environment: [String: String]
    /// Which of the service's replicas this process is (0 when it runs as one). Its
    /// endpoints are the `replica`-th of the lists, its file `<service>-<replica>.sqlite`
    /// (replica 0: `<service>.sqlite`), and only replica 0 owns state that must not
    /// split (geo's fences).
    public var replica: Int
    /// `HEREABOUTS_REQUIRE_VERIFIED_EMAIL=writes`: posts, ratings and chat messages only
    /// from registered users who confirmed their address (and anonymous ones, as the ops allow).
    public var requireConfirmedEmail = false

    /// Values that win over the environment (an executable's flags).
    public struct Overrides: Sendable {
        public var endpoint: String?
        public var events: String?
        public var dataDirectory: String?
        public var workers: Int?
        public var logLevel: String?
        public var replica: String?

        public init(endpoint: String? = nil, events: String? = nil, dataDirectory: String? = nil,
                    workers: Int? = nil, logLevel: String? = nil, replica: String? = nil) {
            self.endpoint = endpoint
            self.events = events
            self.dataDirectory = dataDirectory
            self.workers = workers
            self.logLevel = logLevel
            self.replica = replica
        }
    }

    public init(service: String, options: ServiceOptions, environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        try self.init(service: service, overrides: options.overrides, environment: environment)
    }

    public init(service: String, overrides options: Overrides = Overrides(),
                environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.service = service
        self.environment = environment
        let replicaText = options.replica ?? environment["HEREABOUTS_REPLICA"].flatMap { $0.isEmpty ? nil : $0 } ?? "0"
        guard let replica = Self.replicaNumber(replicaText) else {
            throw ValidationError("the replica must be a number from 0 to 999, or a name ending in one (geo-2), not \(replicaText)")
        }
        self.replica = replica
        let own = ServiceEndpoints.resolve(service, environment: environment)
        let requestsList = ServiceEndpoints.list(own.requests), eventsList = own.events.map(ServiceEndpoints.list)
        if options.endpoint == nil, !requestsList.isEmpty, replica >= requestsList.count {
            throw ValidationError("\(ServiceEndpoints.requestsVariable(service)) names \(requestsList.count) endpoint(s); replica \(replica) needs \(replica + 1), or give --endpoint")
        }
        if options.events == nil, let eventsList, !eventsList.isEmpty, replica >= eventsList.count {
            throw ValidationError("\(ServiceEndpoints.eventsVariable(service)) names \(eventsList.count) endpoint(s); replica \(replica) needs \(replica + 1), or give --events")
        }
        endpoint = options.endpoint ?? requestsList.dropFirst(replica).first ?? own.requests
        eventsEndpoint = options.events ?? eventsList?.dropFirst(replica).first ?? own.events
        dataDirectory = options.dataDirectory ?? environment["HEREABOUTS_DATA_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? Self.defaultDataDirectory(environment: environment)
        backupDirectory = environment["HEREABOUTS_BACKUP_DIR"].flatMap { $0.isEmpty ? nil : $0 }
            ?? URL(fileURLWithPath: dataDirectory).appendingPathComponent("backups").path
        if let text = options.workers.map(String.init) ?? environment["HEREABOUTS_WORKERS"] {
            guard let count = Int(text), (1...256).contains(count) else {
                throw ValidationError("workers must be a number from 1 to 256, not \(text)")
            }
            workers = count
        } else {
            // Workers mostly wait for SQLite, and writes that wait together commit together.
            workers = max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
        }
        let levelText = options.logLevel ?? environment["HEREABOUTS_LOG_LEVEL"] ?? "info"
        guard let level = Logger.Level(rawValue: levelText.lowercased()) else {
            throw ValidationError("log level must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not \(levelText)")
        }
        logLevel = level
        if let text = environment["HEREABOUTS_RATE_LIMIT"], !text.isEmpty {
            guard let policy = RateLimiter.Policy.parse(text) else {
                throw ValidationError("HEREABOUTS_RATE_LIMIT must be writes per second (N, or N/BURST; 0 for no limit), not \(text)")
            }
            rateLimit = policy
        } else {
            rateLimit = .standard
        }
        if let text = environment["HEREABOUTS_DATABASE_MAX_BYTES"], !text.isEmpty {
            guard let bytes = Self.byteCount(text), bytes >= 65_536 else {
                throw ValidationError("HEREABOUTS_DATABASE_MAX_BYTES must be a size of at least 64K (bytes, or with K, M or G), not \(text)")
            }
            databaseMaxBytes = bytes
        }
        switch environment["HEREABOUTS_REQUIRE_VERIFIED_EMAIL"]?.lowercased() ?? "" {
        case "", "off": requireConfirmedEmail = false
        case "writes": requireConfirmedEmail = true
        case let other:
            throw ValidationError("HEREABOUTS_REQUIRE_VERIFIED_EMAIL must be writes or off, not \(other)")
        }
        do {
            keys = try KeyRing.fromEnvironment(environment, component: service)
        } catch {
            throw ValidationError("\(KeyRing.environmentVariable): \(error)")
        }
    }

    /// CURVE keys from `HEREABOUTS_KEYS_DIR`; nil runs plaintext.
    public var keys: KeyRing?

    /// How this service's ROUTER and PUB sockets run.
    public var serverCurve: CurveRole? { keys?.server }

    /// How this service connects to `peer`'s sockets.
    public func clientCurve(of peer: String) throws -> CurveRole? {
        try keys?.client(of: peer)
    }

    /// `4096`, `64K`, `512M`, `2G` (powers of 1,024) as bytes.
    static func byteCount(_ text: String) -> Int64? {
        let units: [Character: Int64] = ["K": 1 << 10, "M": 1 << 20, "G": 1 << 30]
        let unit = text.last.flatMap { units[Character($0.uppercased())] }
        guard let number = Int64(unit == nil ? text : String(text.dropLast())), number > 0 else { return nil }
        let (bytes, overflow) = number.multipliedReportingOverflow(by: unit ?? 1)
        return overflow ? nil : bytes
    }

    /// The file of this service's database (of this replica's, `<service>-<k>.sqlite`).
    public var databasePath: String {
        ServiceDatabase.path(service: ServiceEndpoints.replicaName(service, replica), in: dataDirectory)
    }

    /// `2`, or the number a name ends in: `geo-2` (a StatefulSet's pod).
    static func replicaNumber(_ text: String) -> Int? {
        let digits = text.reversed().prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 3, digits.count == text.count || text.dropLast(digits.count).last == "-" else { return nil }
        return Int(String(digits.reversed()))
    }

    /// Where another service listens, from the same environment variables.
    public func endpoints(of peer: String) -> (requests: String, events: String?) {
        ServiceEndpoints.resolve(peer, environment: environment)
    }

    static func defaultDataDirectory(environment: [String: String]) -> String {
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("hereabouts").path
        }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/hereabouts").path
    }
}
