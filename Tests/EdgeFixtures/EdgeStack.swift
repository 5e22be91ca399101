import Contracts
import Foundation
import GRDB
import ServiceKit
import ServiceKitTesting
import Wire

/// The whole stack as an app meets it: `here up` starting the five services and the
/// edge as processes, in a fresh data directory, the edge on a free port. Stop it at
/// the end (or let it go out of scope).
public final class EdgeStack {
    public let directory: URL
    public let environment: [String: String]
    public let port: Int
    /// Where the edge serves `/metrics` (its own listener).
    public let metricsPort: Int
    public let up: ChildProcess

    /// Starts the stack; `environment` adds to (or overrides) the edge's and services'
    /// settings, e.g. `HEREABOUTS_EDGE_RATE_LIMIT`.
    public init(_ name: String, environment extra: [String: String] = [:], arguments: [String] = []) throws {
        directory = URL(fileURLWithPath: "/tmp/hb-\(name)-\(Identifier.random(count: 6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try Self.freePort()
        metricsPort = try Self.freePort()
        var environment = ["XDG_CONFIG_HOME": directory.appendingPathComponent("config").path, "HEREABOUTS_LOG_LEVEL": "warning",
                           "HEREABOUTS_BIN_DIR": ChildProcess.binDirectory.path,
                           "HEREABOUTS_DATA_DIR": directory.appendingPathComponent("data").path,
                           "HEREABOUTS_EDGE_LISTEN": "127.0.0.1:\(port)",
                           "HEREABOUTS_EDGE_METRICS_LISTEN": "127.0.0.1:\(metricsPort)",
                           // Registrations wait for scrypt behind a whole suite's (and the
                           // flood test's hashes have the standard cost, ~0.4 s each).
                           "HEREABOUTS_EDGE_SERVICE_TIMEOUT": "60",
                           // Tests send from one address faster than a person would.
                           "HEREABOUTS_EDGE_RATE_LIMIT": "0"]
        for service in ServiceEndpoints.services {
            environment[ServiceEndpoints.requestsVariable(service)] = try ChildProcess.freeEndpoint()
            environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
        }
        environment.merge(ChildProcess.testSettings) { $1 }
        environment.merge(extra) { $1 }
        self.environment = environment
        up = try ChildProcess("here", arguments: ["up"] + arguments, environment: environment,
                              log: directory.appendingPathComponent("up.log"))
        let deadline = Date().addingTimeInterval(120)
        while !up.logText.contains("apps and browsers: ") {
            guard up.process.isRunning, Date() < deadline else {
                throw RawConnection.Failure(description: "the stack did not start: \(up.logText)\n\(edgeLog)")
            }
            Thread.sleep(forTimeInterval: 0.1)
        }
    }

    deinit {
        stop()
        try? FileManager.default.removeItem(at: directory)
    }

    public func stop() {
        up.terminate()
    }

    /// An anonymous client of the edge.
    public var client: EdgeClient { EdgeClient(port: port) }

    /// What the edge logged.
    public var edgeLog: String { logs.log(of: "edge") }

    /// The stack's logs, to read from any thread.
    public var logs: StackLogs { StackLogs(directory: directory) }

    /// A new anonymous user's session, over HTTP.
    public func anonymous() throws -> SessionReply {
        let reply = try client.post("/v1/auth/anonymous")
        guard reply.status == 201 else { throw RawConnection.Failure(description: "anonymous: \(reply)") }
        return try reply.decode(SessionReply.self)
    }

    /// A registered user's session, over HTTP.
    public func register(_ email: String, displayName: String? = nil) throws -> SessionReply {
        var body: JSONObject = ["email": .string(email), "password": .string("password1")]
        if let displayName { body["displayName"] = .string(displayName) }
        let reply = try client.post("/v1/auth/register", body)
        guard reply.status == 201 else { throw RawConnection.Failure(description: "register: \(reply)") }
        return try reply.decode(SessionReply.self)
    }

    /// An access token for `session`'s user that expires in `seconds`, signed with
    /// auth's own key as auth would sign it (read from auth's file): how a test sees
    /// a token expire without waiting 15 minutes.
    public func tokenExpiring(in seconds: TimeInterval, for session: SessionReply) throws -> String {
        let queue = try DatabaseQueue(path: directory.appendingPathComponent("data/auth.sqlite").path)
        defer { try? queue.close() }
        let key = try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT kid, private_key FROM signing_key ORDER BY created_at DESC LIMIT 1")
        }
        guard let key else { throw RawConnection.Failure(description: "auth has no signing key") }
        let issuer = try TokenIssuer(kid: key["kid"], privateKey: key["private_key"])
        // The session's id, from the token auth gave it (its payload is the middle part).
        let payload = session.accessToken.split(separator: ".").dropFirst().first.flatMap { Base64URL.decode(String($0)) }
        guard let payload, case .string(let sessionID)? = try JSONParser.parse(payload)["sid"] else {
            throw RawConnection.Failure(description: "no session id in the token")
        }
        return try issuer.accessToken(userID: session.user.id, sessionID: sessionID, anonymous: session.user.anonymous,
                                      now: Date(), lifetime: seconds)
    }

    /// A TCP port that was free a moment ago.
    public static func freePort() throws -> Int {
        let endpoint = try ChildProcess.freeEndpoint()
        guard let port = endpoint.split(separator: ":").last.flatMap({ Int($0) }) else {
            throw RawConnection.Failure(description: "no port in \(endpoint)")
        }
        return port
    }
}

/// The logs of an `EdgeStack`: `here up`'s and each service's.
public struct StackLogs: Sendable {
    let directory: URL

    /// What a service (`edge`, `geo`, …) logged.
    public func log(of service: String) -> String {
        (try? String(contentsOf: directory.appendingPathComponent("data/logs/\(service).log"), encoding: .utf8)) ?? ""
    }

    /// The last `lines` of `here up`'s log and of each service's named: for a test's
    /// failure message.
    public func tails(_ services: [String], lines: Int = 30) -> String {
        let up = (try? String(contentsOf: directory.appendingPathComponent("up.log"), encoding: .utf8)) ?? ""
        return ([("here up", up)] + services.map { ($0, log(of: $0)) }).map { name, text in
            "--- \(name) (last \(lines) lines)\n" + text.split(separator: "\n").suffix(lines).joined(separator: "\n")
        }.joined(separator: "\n")
    }
}
