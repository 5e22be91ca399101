import Foundation
import HTTPTypes
import OpenAPIRuntime

/// Gives every write an `Idempotency-Key` (unless the caller set one). The retries
/// inside reuse it, so a write whose answer was lost is applied once.
struct IdempotencyKeyMiddleware: ClientMiddleware {
    static let writes: Set<HTTPRequest.Method> = [.post, .put, .patch, .delete]

    func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                   next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
        async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if Self.writes.contains(request.method), request.headerFields[.idempotencyKey] == nil {
            request.headerFields[.idempotencyKey] = UUID().uuidString
        }
        return try await next(request, body, baseURL)
    }
}

/// Sends the app's languages as `Accept-Language` (`de-CH, de;q=0.9, en;q=0.8`), by
/// which the server names places and countries, unless the request sets its own.
struct LanguageMiddleware: ClientMiddleware {
    let header: String?

    init(languages: [String]) {
        // Quality falls by a tenth a language: the ninth has 0.2, and more are left out.
        let tags = languages.prefix(9).enumerated().map { index, tag in index == 0 ? tag : "\(tag);q=0.\(10 - index)" }
        header = tags.isEmpty ? nil : tags.joined(separator: ", ")
    }

    func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                   next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
        async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        if let header, request.headerFields[.acceptLanguage] == nil { request.headerFields[.acceptLanguage] = header }
        return try await next(request, body, baseURL)
    }
}

/// Turns every answer of 400 and above into a thrown `HereaboutsError` (from the
/// problem details), and a request that got no answer into `network`.
struct ProblemMiddleware: ClientMiddleware {
    func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                   next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
        async throws -> (HTTPResponse, HTTPBody?) {
        let (response, responseBody) = try await Self.answer { try await next(request, body, baseURL) }
        guard response.status.code >= 400 else { return (response, responseBody) }
        throw await Self.error(response, responseBody)
    }

    static func answer<Value>(_ call: () async throws -> Value) async throws -> Value {
        do {
            return try await call()
        } catch let error as HereaboutsError {
            throw error
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw HereaboutsError.network(error)
        }
    }

    static func error(_ response: HTTPResponse, _ body: HTTPBody?) async -> HereaboutsError {
        let retryAfter = response.headerFields[.retryAfter].flatMap(TimeInterval.init)
        var data: Data?
        if let body { data = try? await Data(collecting: body, upTo: 64 * 1024) }
        if let data, let problem = try? JSONDecoder().decode(Components.Schemas.Problem.self, from: data) {
            return HereaboutsError(code: problem.code, field: problem.field, detail: problem.detail,
                                   status: response.status.code, retryAfter: retryAfter)
        }
        return HereaboutsError(code: response.status.code >= 500 ? "internal" : "bad_request",
                               detail: "HTTP \(response.status.code) \(response.status.reasonPhrase)",
                               status: response.status.code, retryAfter: retryAfter)
    }
}

/// Sends a request again when no answer came (a dropped connection, a timeout), up to
/// `tries` in all with jittered backoff: reads and PUT/DELETE always (they are
/// idempotent), other writes because they carry an `Idempotency-Key`. Never a
/// refresh or an anonymous sign-in: the server does not replay those.
struct RetryMiddleware: ClientMiddleware {
    var tries = 3
    var firstDelay: TimeInterval = 0.25
    static let notRepeated: Set<String> = ["refresh", "anonymous"]

    func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                   next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
        async throws -> (HTTPResponse, HTTPBody?) {
        let repeatable = !Self.notRepeated.contains(operationID)
            && (request.method == .get || request.method == .head || request.method == .put || request.method == .delete
                || request.headerFields[.idempotencyKey] != nil)
            && body.map { $0.iterationBehavior == .multiple } ?? true
        var attempt = 1
        while true {
            do {
                return try await next(request, body, baseURL)
            } catch let error where repeatable && attempt < tries && !(error is CancellationError) && !(error is HereaboutsError) {
                try await Task.sleep(for: .seconds(Backoff.delay(attempt: attempt, first: firstDelay, cap: 5)))
                attempt += 1
            }
        }
    }
}

/// Sends the session's access token; on `401`, refreshes the session once and sends
/// the request again with the new token.
struct AuthMiddleware: ClientMiddleware {
    let sessions: SessionKeeper
    /// Operations that make a session rather than use one.
    static let sessionless: Set<String> = ["register", "login", "anonymous", "refresh", "jwks"]

    func intercept(_ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
                   next: @Sendable (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?))
        async throws -> (HTTPResponse, HTTPBody?) {
        guard !Self.sessionless.contains(operationID), let token = try await sessions.accessToken() else {
            return try await next(request, body, baseURL)
        }
        var request = request
        request.headerFields[.authorization] = "Bearer \(token)"
        let (response, responseBody) = try await next(request, body, baseURL)
        guard response.status == .unauthorized, body.map({ $0.iterationBehavior == .multiple }) ?? true else {
            return (response, responseBody)
        }
        let renewed = try await sessions.refresh(replacing: token)
        request.headerFields[.authorization] = "Bearer \(renewed.accessToken)"
        return try await next(request, body, baseURL)
    }
}

/// Exponential backoff with jitter: a random wait between half of and all of
/// `first`·2^(attempt−1), at most `cap`, so clients cut off together do not come back together.
enum Backoff {
    static func delay(attempt: Int, first: TimeInterval, cap: TimeInterval) -> TimeInterval {
        let ceiling = min(cap, first * pow(2, Double(max(0, attempt - 1))))
        return Double.random(in: (ceiling / 2)...ceiling)
    }
}

extension HTTPField.Name {
    static let idempotencyKey = HTTPField.Name("Idempotency-Key")!
}
