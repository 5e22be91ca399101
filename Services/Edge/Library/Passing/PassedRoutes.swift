import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import ServiceCore
import Synchronization
import Wire

/// The passed routes (`PassRoute`), and what each request to one goes through on
/// its event loop: what Hummingbird's middleware does for the other routes, in the
/// same order (`EdgeService.init`) and through the same functions: the request's id
/// and client, the metrics, the operators' counts, CORS, problems, the rate limit.
final class PassedRoutes: Sendable {
    struct Settings: Sendable {
        var trustedProxies: Set<String>
        var corsOrigins: Set<String>
        var limiter: RateLimiter?
        var serverName: String
    }

    let routes: [PassRoute]
    private let settings: Settings
    private let backends: Backends
    /// Every route's pattern, for `405` and its `Allow`.
    private let table: RouteTable
    private let activity: EdgeActivity
    private let logger: Logger
    private let metrics = RouteMetrics()

    init(routes: [PassRoute], settings: Settings, backends: Backends, table: RouteTable, activity: EdgeActivity, logger: Logger) {
        self.routes = routes
        self.settings = settings
        self.backends = backends
        self.table = table
        self.activity = activity
        self.logger = logger
    }

    /// The passed route `head` asks for, with its path's parameters; nil for any
    /// other request (Hummingbird's), and for an upgrade (Hummingbird redirects it).
    func route(for head: HTTPRequest) -> (route: PassRoute, parameters: [String: String])? {
        guard let target = head.path, head.headerFields[.upgrade] == nil else { return nil }
        // Cut and split as bytes, as Hummingbird's URI reads a target: `?`, `#` and `/` are
        // ASCII, so every piece is whole UTF-8; the path is not walked Character by Character.
        let utf8 = target.utf8
        let end = utf8.firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? utf8.endIndex
        let path = utf8[..<end].split(separator: UInt8(ascii: "/")).map { Substring($0) }
        // By index: a route is copied (its closures and strings retained) only once it matches.
        for index in routes.indices {
            if let parameters = routes[index].match(head.method, path) { return (routes[index], parameters) }
        }
        return nil
    }

    /// Answers `head`, a request for `route`, from `peer`: `then` gets the whole
    /// answer, on whichever thread had the service's reply.
    func answer(_ head: HTTPRequest, route: PassRoute, parameters: [String: String], peer: String,
                then: @escaping @Sendable (EdgeReply) -> Void) {
        let started = DispatchTime.now().uptimeNanoseconds
        let requestID = ClientMiddleware.requestID(of: head.headerFields)
        let client = ClientMiddleware.client(of: head.headerFields, peer: peer, trusting: settings.trustedProxies)
        let request = PassRequest(head: head, uri: URI(head.path ?? "/"), parameters: parameters)
        let finish: @Sendable (Result<EdgeReply, any Error>) -> Void = { [self] result in
            var reply: EdgeReply
            switch result {
            case .success(let made): reply = made
            case .failure(let error):
                var logger = self.logger
                logger[metadataKey: "request"] = "\(requestID)"
                reply = ProblemMiddleware.answer(error, method: head.method, path: request.uri.path, requestID: requestID,
                                                 routes: table, activity: activity, logger: logger).reply
            }
            activity.requestAnswered(status: Int(reply.status.code))
            if let origin = head.headerFields[.origin], settings.corsOrigins.contains(origin) {
                CORS.answer(origin, in: &reply.headers)
            }
            reply.headers[.xRequestID] = requestID
            reply.headers[.date] = HTTPDate.now()
            reply.headers[.server] = settings.serverName
            metrics.answered(route, status: reply.status, nanoseconds: DispatchTime.now().uptimeNanoseconds - started)
            then(reply)
        }
        do {
            if let limiter = settings.limiter,
               let refusal = RateLimitMiddleware.refusal(by: limiter, of: ClientAddress.budgetKey(client)) {
                throw refusal
            }
            let body = try route.body(request)
            let token = try head.headerFields.bearerToken()
            let id = try head.headerFields.idempotencyKey()
            backends.client(route.service).callRaw(op: route.op, body: .object(body), token: token, origin: client, id: id) { result in
                finish(Result { try route.reply(request, try result.get()) })
            }
        } catch {
            finish(.failure(error))
        }
    }
}

/// The metrics Hummingbird's `MetricsMiddleware` keeps for its routes (a count and
/// a duration by route, method and status), kept the same way for the passed ones:
/// one `/metrics` whichever served a request.
final class RouteMetrics: Sendable {
    private struct Key: Hashable {
        var pattern: String
        var method: HTTPRequest.Method
        var status: Int
    }

    private let kept = Mutex<[Key: (counter: Counter, timer: Timer)]>([:])

    func answered(_ route: PassRoute, status: HTTPResponse.Status, nanoseconds: UInt64) {
        let key = Key(pattern: route.pattern, method: route.method, status: status.code)
        let metrics = kept.withLock { kept in
            if let metrics = kept[key] { return metrics }
            let dimensions = [("http.route", key.pattern), ("http.request.method", key.method.rawValue),
                              ("http.response.status_code", "\(key.status)")]
            let made = (Counter(label: "hb.requests", dimensions: dimensions),
                        Timer(label: "http.server.request.duration", dimensions: dimensions, preferredDisplayUnit: .seconds))
            kept[key] = made
            return made
        }
        metrics.counter.increment()
        metrics.timer.recordNanoseconds(Int64(clamping: nanoseconds))
    }
}

/// An HTTP `Date` value (RFC 9110, IMF-fixdate), made once a second.
enum HTTPDate {
    private static let cached = Mutex<(second: Int, text: String)>((-1, ""))

    static func now() -> String {
        let second = time(nil)
        return cached.withLock { cached in
            if cached.second != second { cached = (second, format(second)) }
            return cached.text
        }
    }

    static func format(_ second: Int) -> String {
        var seconds = time_t(second)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(parts.tm_year + 1900) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) GMT"
    }
}
