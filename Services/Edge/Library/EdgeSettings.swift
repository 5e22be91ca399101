import Contracts
import Foundation
import Logging
import ServiceClient
import ServiceCore
import Wire
import ZeroMQ

/// The edge's settings: flags, then `HEREABOUTS_EDGE_*` (and the stack's own
/// `HEREABOUTS_*`) variables, then defaults.
public struct EdgeSettings: Sendable {
    /// Where the HTTP server listens.
    public var host: String
    public var port: Int
    /// Where `/metrics` is served, apart from the apps' port as Prometheus exporters
    /// are (`HEREABOUTS_EDGE_METRICS_LISTEN`, default `127.0.0.1:9464`, `off` for none):
    /// request rates and errors by route are not for the internet.
    public var metricsListen: (host: String, port: Int)?
    /// Origins a browser may call from (`Access-Control-Allow-Origin`); none by default.
    public var corsOrigins: [String]
    /// Proxies whose `X-Forwarded-For` is believed (exact addresses).
    public var trustedProxies: Set<String>
    /// PEM files; both, or neither (plain HTTP).
    public var tlsCertificate: String?
    public var tlsKey: String?
    /// Requests per second per client address, and the burst; nil for no limit.
    public var rateLimit: RateLimiter.Policy?
    /// WebSockets open at once, in all; per user; and per client address (an IPv6
    /// client's /64).
    public var maxSockets: Int
    public var maxSocketsPerUser: Int
    public var maxSocketsPerAddress: Int
    /// A request's headers must arrive within this; a connection with no request in
    /// it for this long is closed.
    public var headerTimeout: TimeInterval
    /// A request's body must arrive within this of its headers.
    public var bodyTimeout: TimeInterval
    /// How often a socket's live queries are renewed at geo (`HEREABOUTS_EDGE_WATCH_RENEW`,
    /// seconds, default 240: well inside geo's 600 s lease). Also how soon a watch geo
    /// lost in a restart is found missing and opened again.
    public var watchRenewal: TimeInterval
    /// How long a call to a service waits for each try, and how many tries.
    public var serviceTimeout: TimeInterval
    public var serviceTries: Int
    public var logLevel: Logger.Level
    /// The environment the settings were read from: the services' endpoints and keys.
    public var environment: [String: String]
    /// Where Leaflet is installed (Debian's `libjs-leaflet`), served to the console.
    public var leafletDirectory: String
    /// The console map's tiles (`{z}`, `{x}`, `{y}` in it) and the credit they need.
    public var tileURL: String
    public var tileAttribution: String
    /// `HEREABOUTS_MAIL_SHOW_LINKS` (auth's, which `here up --demo` gives every process):
    /// the console offers the links of kept mail (`GET /v1/dev/mail`).
    public var showsMailLinks: Bool
    /// The accounts, by user id or by email address (lower-cased, as addresses compare), that may see the
    /// console's operators' page and `GET /v1/operator/status`; none by default. Either
    /// way the account's address must be confirmed: an unconfirmed address is anyone's
    /// who typed it.
    public var operators: Set<String>
    /// The edge's CURVE keys (component `edge`); nil for a plaintext stack.
    public var keys: KeyRing?

    /// Body limits (EDGE.md): JSON and images.
    public static let jsonBodyBytes = 1024 * 1024
    public static let imageBodyBytes = 8 * 1024 * 1024
    /// Headers in all.
    public static let headerBytes = 16 * 1024
    /// The first message a WebSocket must send (its token) within this.
    public static let socketAuthTimeout: TimeInterval = 10
    /// Events queued for one socket and not yet sent, past which it is closed.
    public static let socketBacklog = 1_000
    /// Every open socket gets a ping this often (EDGE.md: 30 s), from the event hub's
    /// one thread…
    public static let socketPingInterval: TimeInterval = 30
    /// …and is closed when it has sent nothing, pongs included, for this long.
    public static let socketSilenceLimit: TimeInterval = 60

    public init(environment: [String: String] = ProcessInfo.processInfo.environment, listen: String? = nil) throws {
        self.environment = environment
        func value(_ name: String) -> String? {
            environment["HEREABOUTS_EDGE_\(name)"].flatMap { $0.isEmpty ? nil : $0 }
        }
        (host, port) = try Self.address(listen ?? value("LISTEN") ?? "127.0.0.1:8080", name: "HEREABOUTS_EDGE_LISTEN")
        let metrics = value("METRICS_LISTEN") ?? "127.0.0.1:9464"
        metricsListen = metrics.lowercased() == "off" ? nil : try Self.address(metrics, name: "HEREABOUTS_EDGE_METRICS_LISTEN")
        corsOrigins = value("CORS_ORIGINS").map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? []
        trustedProxies = Set(value("TRUSTED_PROXIES").map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } } ?? [])
        tlsCertificate = value("TLS_CERT")
        tlsKey = value("TLS_KEY")
        guard (tlsCertificate == nil) == (tlsKey == nil) else {
            throw EdgeSettingsError("HEREABOUTS_EDGE_TLS_CERT and HEREABOUTS_EDGE_TLS_KEY go together")
        }
        if let text = value("RATE_LIMIT") {
            guard let policy = RateLimiter.Policy.parse(text) else {
                throw EdgeSettingsError("HEREABOUTS_EDGE_RATE_LIMIT must be requests per second (N, or N/BURST; 0 for none), not \(text)")
            }
            rateLimit = policy
        } else {
            rateLimit = RateLimiter.Policy(perSecond: 50, burst: 200)
        }
        maxSockets = try Self.integer(value("MAX_SOCKETS"), name: "HEREABOUTS_EDGE_MAX_SOCKETS", default: 20_000, in: 1...1_000_000)
        maxSocketsPerUser = try Self.integer(value("MAX_SOCKETS_PER_USER"), name: "HEREABOUTS_EDGE_MAX_SOCKETS_PER_USER",
                                             default: 8, in: 1...1_000)
        maxSocketsPerAddress = try Self.integer(value("MAX_SOCKETS_PER_ADDRESS"), name: "HEREABOUTS_EDGE_MAX_SOCKETS_PER_ADDRESS",
                                                default: 100, in: 1...1_000_000)
        headerTimeout = Double(try Self.integer(value("HEADER_TIMEOUT"), name: "HEREABOUTS_EDGE_HEADER_TIMEOUT",
                                                default: 10, in: 1...3600))
        bodyTimeout = Double(try Self.integer(value("BODY_TIMEOUT"), name: "HEREABOUTS_EDGE_BODY_TIMEOUT", default: 60, in: 1...3600))
        watchRenewal = Double(try Self.integer(value("WATCH_RENEW"), name: "HEREABOUTS_EDGE_WATCH_RENEW", default: 240, in: 1...540))
        // Each try; a registration waits for scrypt (~0.4 s) behind other logins.
        serviceTimeout = Double(try Self.integer(value("SERVICE_TIMEOUT"), name: "HEREABOUTS_EDGE_SERVICE_TIMEOUT",
                                                 default: 5, in: 1...300))
        serviceTries = 2
        // Addresses compare without case; ids are case-sensitive.
        operators = Set(value("OPERATORS").map { $0.split(separator: ",").map { entry in
            let trimmed = entry.trimmingCharacters(in: .whitespaces)
            return trimmed.contains("@") ? trimmed.lowercased() : trimmed
        } } ?? [])
        if let malformed = operators.first(where: { entry in
            entry.contains("@") ? (try? AuthRules.email(entry)) == nil : !Identifier.isValidEntityID(entry)
        }) {
            throw EdgeSettingsError("HEREABOUTS_EDGE_OPERATORS must list user ids or email addresses, comma-separated, not \(malformed)")
        }
        leafletDirectory = value("LEAFLET_DIR") ?? "/usr/share/javascript/leaflet"
        tileURL = value("TILE_URL") ?? ConsoleFiles.defaultTileURL
        tileAttribution = value("TILE_ATTRIBUTION") ?? (value("TILE_URL") == nil ? ConsoleFiles.defaultTileAttribution : "")
        showsMailLinks = ["1", "on", "true"].contains(environment["HEREABOUTS_MAIL_SHOW_LINKS"]?.lowercased() ?? "")
        let levelText = environment["HEREABOUTS_LOG_LEVEL"] ?? "info"
        guard let level = Logger.Level(rawValue: levelText.lowercased()) else {
            throw EdgeSettingsError("HEREABOUTS_LOG_LEVEL must be one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        logLevel = level
        keys = try KeyRing.fromEnvironment(environment, component: "edge")
    }

    /// `host:port` (`[::1]:8080` for IPv6; no host for every interface).
    private static func address(_ text: String, name: String) throws -> (host: String, port: Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
            throw EdgeSettingsError("\(name) must be host:port, not \(text)")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host.isEmpty ? "0.0.0.0" : host, port)
    }

    private static func integer(_ text: String?, name: String, default defaultValue: Int, in range: ClosedRange<Int>) throws -> Int {
        guard let text else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw EdgeSettingsError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(text)")
        }
        return number
    }

    /// A service's request endpoint, from the stack's variables.
    public func endpoint(of service: String) -> String {
        ServiceEndpoints.resolve(service, environment: environment).requests
    }

    /// A service's event endpoint, from the stack's variables.
    public func eventsEndpoint(of service: String) -> String? {
        ServiceEndpoints.resolve(service, environment: environment).events
    }

    /// How the edge connects to a service's sockets.
    public func curve(of service: String) throws -> CurveRole? {
        try keys?.client(of: service)
    }

    /// The URL the edge answers on, for people.
    public var url: String {
        let shown = host == "0.0.0.0" ? "127.0.0.1" : host.contains(":") ? "[\(host)]" : host
        return "\(tlsCertificate == nil ? "http" : "https")://\(shown):\(port)"
    }
}

public struct EdgeSettingsError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
