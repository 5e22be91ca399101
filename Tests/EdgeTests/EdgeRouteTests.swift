import Chat
import Contracts
@testable import Edge
import Favourites
import Foundation
import Geo
import HTTPTypes
import EdgeFixtures
import Hummingbird
import NIOCore
import ServiceKit
import ServiceKitTesting
import StackFixtures
import Synchronization
import Testing
import Wire

/// The edge's routes in this process: the five services started in it (each on its
/// own `ipc://` endpoint), the edge's application running on a free port with its own
/// channel handlers (the routes passed on the event loops are below Hummingbird's
/// router, which an in-memory test client would miss), asked over real sockets.
/// What needs processes (`here up`, signals, kills, freezing) stays in SystemTests.
@Suite("The edge's routes, in process")
struct EdgeRouteTests {
    @Test("every route the edge serves answers as its document says, and the table holds no route this walk misses")
    func everyRoute() async throws {
        let upstream = try Upstream()
        let stack = upstream.stack
        for service in ["geo", "favourites", "chat"] {
            let settings = try stack.settings(for: service)
            let logger = TestStack.logger(service)
            switch service {
            case "geo": try stack.start(try GeoService(settings: settings, logger: logger))
            case "favourites": try stack.start(try FavouritesService(settings: settings, logger: logger))
            default: try stack.start(try ChatService(settings: settings, logger: logger))
            }
        }
        let operatorUser = try upstream.user()
        var environment = stack.environment
        environment["HEREABOUTS_EDGE_RATE_LIMIT"] = "0"
        environment["HEREABOUTS_EDGE_SERVICE_TIMEOUT"] = "20"
        environment["HEREABOUTS_EDGE_METRICS_LISTEN"] = "off"
        environment["HEREABOUTS_EDGE_OPERATORS"] = operatorUser.id
        let port = try #require(Int(try ChildProcess.freeEndpoint().split(separator: ":").last ?? ""))
        let edge = try EdgeService(settings: try EdgeSettings(environment: environment, listen: "127.0.0.1:\(port)"),
                                   logger: TestStack.logger("edge"))
        let routes = edge.routes.routes.map { RouteVisits.Route(method: $0.method, pattern: $0.pattern) }
        let visits = RouteVisits()
        let mailbox = Mailbox(directory: stack.directory.appendingPathComponent("mail"))
        let application = try edge.application()
        let running = Task { try await application.runService(gracefulShutdownSignals: []) }
        var failure: (any Error)?
        do {
            let http = RouteClient(port: port, visits: visits)
            try await http.waitUntilListening()
            try await Journey(http: http, operatorToken: operatorUser.token, operatorEmail: "user1@example.org", mailbox: mailbox).walk()
        } catch {
            failure = error
        }
        // Cancelling the service's task shuts the application down gracefully.
        running.cancel()
        _ = await running.result
        if let failure { throw failure }
        let missed = visits.missed(of: routes)
        #expect(missed.isEmpty, "routes no step reached: \(missed)")
        withExtendedLifetime(upstream) {}
    }
}

/// Which routes a walk reached.
final class RouteVisits: Sendable {
    struct Route: Sendable, CustomStringConvertible {
        let method: HTTPRequest.Method
        let pattern: String
        var description: String { "\(method) \(pattern)" }

        func matches(_ method: HTTPRequest.Method, _ path: String) -> Bool {
            let patternParts = pattern.split(separator: "/"), pathParts = path.split(separator: "?")[0].split(separator: "/")
            return method == self.method && patternParts.count == pathParts.count
                && zip(patternParts, pathParts).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }
    }

    private let visited = Mutex<[(HTTPRequest.Method, String)]>([])

    func visit(_ method: HTTPRequest.Method, _ path: String) {
        visited.withLock { $0.append((method, path)) }
    }

    /// The routes no visit matched; a literal route wins over a pattern (`/v1/users/near` is not `/v1/users/{id}`).
    func missed(of routes: [Route]) -> [String] {
        let visits = visited.withLock { $0 }
        var reached = Set<String>()
        for (method, path) in visits {
            let matching = routes.filter { $0.matches(method, path) }
            if let best = matching.min(by: { $0.pattern.filter { $0 == "{" }.count < $1.pattern.filter { $0 == "{" }.count }) {
                reached.insert(best.description)
            }
        }
        return routes.map(\.description).filter { !reached.contains($0) }.sorted()
    }
}

/// An answer as a test reads it.
struct Answer: CustomStringConvertible {
    let status: Int
    let headers: HTTPFields
    let body: ByteBuffer

    var json: JSONValue { (try? JSONParser.parse(Data(buffer: body))) ?? .null }
    var object: JSONObject { json.objectValue ?? [:] }
    var description: String { "\(status) \(String(buffer: body).prefix(300))" }

    func string(_ path: String...) -> String {
        var value = json
        for key in path { value = value.objectValue?[key] ?? .null }
        return value.stringValue ?? ""
    }
}

/// An app's requests to the edge on its port (one connection each), recording each
/// route it asks. The sockets block, so each request runs on a thread of its own, off
/// Swift's cooperative pool, where the edge's own tasks run.
struct RouteClient: Sendable {
    let port: Int
    let visits: RouteVisits

    /// Waits (up to 20 s) until the edge answers.
    func waitUntilListening() async throws {
        let deadline = Date().addingTimeInterval(20)
        while true {
            do {
                _ = try await Self.offThePool { [port] in try EdgeClient(port: port).get("/health/live") }
                return
            } catch where Date() < deadline {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    func call(_ method: HTTPRequest.Method, _ path: String, token: String? = nil, json: JSONObject? = nil,
              body: Data? = nil, contentType: String? = nil, headers extra: HTTPFields = [:]) async throws -> Answer {
        visits.visit(method, path)
        var headers = extra
        if let token { headers[.authorization] = "Bearer \(token)" }
        var sent = body
        if let json {
            headers[.contentType] = "application/json"
            sent = try JSONValueEncoder().encodeData(JSONValue.object(json))
        } else if body != nil {
            headers[.contentType] = contentType
        }
        let fields = headers.map { ($0.name.rawName, $0.value) }
        let reply = try await Self.offThePool { [port, sent] in
            try EdgeClient(port: port).send(method.rawValue, path, headers: fields, body: sent)
        }
        var answerHeaders = HTTPFields()
        for (name, value) in reply.headers {
            if let name = HTTPField.Name(name) { answerHeaders.append(HTTPField(name: name, value: value)) }
        }
        return Answer(status: reply.status, headers: answerHeaders, body: ByteBuffer(bytes: reply.body))
    }

    private static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread { continuation.resume(with: Result { try work() }) }
        }
    }
}
