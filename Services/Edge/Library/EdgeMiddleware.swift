import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization
import NIOCore
import ServiceCore
import Wire

/// Whatever a route or the router throws becomes a problem reply (RFC 9457): the
/// edge's own `Problem`s and the services' errors as they are, a route that does not
/// exist as 404 (405 with `Allow` when the path takes other methods), a body over
/// its limit as 413, anything else as 500 with nothing of the inside in it.
struct ProblemMiddleware: RouterMiddleware {
    typealias Context = EdgeContext
    let routes: RouteTable
    /// Where each problem answered is noted, for the operators' page.
    let activity: EdgeActivity

    func handle(_ request: Request, context: EdgeContext, next: (Request, EdgeContext) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch {
            return Self.answer(error, method: request.method, path: request.uri.path, requestID: context.requestID, routes: routes,
                               activity: activity, logger: context.logger).response
        }
    }

    /// The problem `error` is answered with, noted for the operators' page.
    static func answer(_ error: any Error, method: HTTPRequest.Method, path: String, requestID: String, routes: RouteTable,
                       activity: EdgeActivity, logger: Logger) -> Problem {
        let problem = problem(for: error, method: method, path: path, routes: routes, logger: logger)
        activity.problemAnswered(EdgeActivity.ProblemRecord(
            at: Date(), method: method.rawValue, path: path, status: Int(problem.status.code),
            code: problem.code, detail: problem.detail, requestId: requestID))
        return problem
    }

    private static func problem(for error: any Error, method: HTTPRequest.Method, path: String, routes: RouteTable,
                                logger: Logger) -> Problem {
        switch error {
        case let problem as Problem:
            return problem
        case let error as ServiceError:
            if error.code == .internal || error.code == .unavailable {
                logger.warning("\(error.code.rawValue)", metadata: ["error": "\(error)"])
            }
            return Problem(error.code == .internal ? .internal : error)
        case let error as HTTPError where error.status == .notFound:
            let methods = routes.methods(for: path)
            guard methods.isEmpty else {
                var problem = Problem(status: .methodNotAllowed, code: .badRequest,
                                      "\(path) takes \(methods.map(\.rawValue).joined(separator: ", ")), not \(method.rawValue)")
                problem.allow = methods
                return problem
            }
            return Problem.notFound("no route \(method.rawValue) \(path)")
        case is NIOTooManyBytesError:
            return Problem.tooLarge("the body is over this route's limit")
        case let error as HTTPError:
            return Problem(status: error.status, code: error.status.code >= 500 ? .internal : .badRequest,
                           error.body ?? error.status.reasonPhrase)
        default:
            logger.error("internal error", metadata: ["error": "\(String(reflecting: error))"])
            return Problem(.internal)
        }
    }
}

/// Counts every request by its answer's status, for the operators' page.
struct ActivityMiddleware: RouterMiddleware {
    typealias Context = EdgeContext
    let activity: EdgeActivity

    func handle(_ request: Request, context: EdgeContext, next: (Request, EdgeContext) async throws -> Response) async throws -> Response {
        do {
            let response = try await next(request, context)
            activity.requestAnswered(status: Int(response.status.code))
            return response
        } catch {
            activity.requestAnswered(status: 500)
            throw error
        }
    }
}

/// Cross-origin requests from the origins the operator lists, and none other: their
/// preflights answered, their responses marked for them (`Vary: Origin`).
struct CORS: RouterMiddleware {
    typealias Context = EdgeContext
    let origins: Set<String>

    static let allowHeaders = "Authorization, Content-Type, Idempotency-Key, If-Match, If-None-Match, X-Request-Id, Accept, Accept-Language"
    static let exposeHeaders = "ETag, Location, Link, Retry-After, X-Request-Id"

    func handle(_ request: Request, context: EdgeContext, next: (Request, EdgeContext) async throws -> Response) async throws -> Response {
        guard let origin = request.headers[.origin], origins.contains(origin) else { return try await next(request, context) }
        guard request.method == .options, request.headers[.accessControlRequestMethod] != nil else {
            var response = try await next(request, context)
            Self.answer(origin, in: &response.headers)
            return response
        }
        var preflight = Response(status: .noContent, headers: [
            .accessControlAllowMethods: "GET, POST, PUT, PATCH, DELETE, OPTIONS",
            .accessControlAllowHeaders: Self.allowHeaders, .accessControlMaxAge: "600",
        ])
        Self.allow(origin, in: &preflight.headers)
        return preflight
    }

    /// Marks an answer (not a preflight's) for `origin`, one of the listed.
    static func answer(_ origin: String, in headers: inout HTTPFields) {
        headers[.accessControlExposeHeaders] = exposeHeaders
        allow(origin, in: &headers)
    }

    /// Marks a response for `origin`, one of the listed.
    static func allow(_ origin: String, in headers: inout HTTPFields) {
        headers[.accessControlAllowOrigin] = origin
        // Added to a route's own `Vary` (`Accept-Language`, say), not in place of it.
        headers.append(HTTPField(name: .vary, value: "Origin"))
    }
}

/// A token bucket per client address (an IPv6 client's /64): `429` with `Retry-After` past it.
struct RateLimitMiddleware: RouterMiddleware {
    typealias Context = EdgeContext
    let limiter: RateLimiter

    func handle(_ request: Request, context: EdgeContext, next: (Request, EdgeContext) async throws -> Response) async throws -> Response {
        if let refusal = Self.refusal(by: limiter, of: context.clientKey) { throw refusal }
        return try await next(request, context)
    }

    /// `429` when the client's bucket is empty, taking a token from it otherwise.
    static func refusal(by limiter: RateLimiter, of client: String) -> Problem? {
        limiter.take(client).map { wait in
            Problem(ServiceError.rateLimited("too many requests from this address; slow down", retryAfterMs: Int((wait * 1000).rounded(.up))))
        }
    }
}

/// The routes the edge serves, by method and path pattern (`{name}` a parameter):
/// for `Allow` on a wrong method, and for comparing with `Docs/openapi.yaml`. Filled
/// as routes are added, after the middleware that reads it is in place.
final class RouteTable: Sendable {
    struct Route: Sendable, Hashable {
        var method: HTTPRequest.Method
        var pattern: String
    }

    private let added = Mutex<[Route]>([])

    var routes: [Route] { added.withLock { $0 } }

    func add(_ method: HTTPRequest.Method, _ pattern: String) {
        added.withLock { $0.append(Route(method: method, pattern: pattern)) }
    }

    /// The methods whose pattern matches `path`.
    func methods(for path: String) -> [HTTPRequest.Method] {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return routes.filter { route in
            let pattern = route.pattern.split(separator: "/", omittingEmptySubsequences: false)
            return pattern.count == segments.count && zip(pattern, segments).allSatisfy { $0.hasPrefix("{") || $0 == $1 }
        }.map(\.method)
    }
}
