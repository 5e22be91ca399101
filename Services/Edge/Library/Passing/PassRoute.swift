import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import NIOCore
import ServiceClient
import Wire

/// A response as a route makes it: status, header fields and the body's bytes, for
/// Hummingbird (`response`) or written on a channel as it is (`PassingHandler`).
struct EdgeReply: Sendable {
    var status: HTTPResponse.Status
    var headers: HTTPFields
    var body: ByteBuffer?

    var response: Response {
        Response(status: status, headers: headers, body: body.map { .init(byteBuffer: $0) } ?? .init())
    }

    /// A service's reply body as the answer: `204` for an op that answers `{}` (it
    /// has nothing to say), else `status` with the bytes as they came.
    static func json(_ bytes: Data, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> EdgeReply {
        // Compared by its two bytes: a `Data("{}")` to compare with was made at every reply.
        if status == .ok, bytes.count == 2, bytes.first == UInt8(ascii: "{"), bytes.last == UInt8(ascii: "}") {
            return EdgeReply(status: .noContent, headers: headers)
        }
        var headers = headers
        headers[.contentType] = "application/json"
        return EdgeReply(status: status, headers: headers, body: ByteBuffer(bytes: bytes))
    }
}

/// What a passed route sees of its request: the head, its URI, the path's
/// parameters (`{id}` in the pattern) and, for a route that reads one, its JSON body.
struct PassRequest: Sendable {
    let head: HTTPRequest
    let uri: URI
    let parameters: [String: String]
    var json: JSONObject?

    var headers: HTTPFields { head.headerFields }

    /// A path parameter the route declares.
    func parameter(_ name: String) throws -> String {
        guard let value = parameters[name] else { throw Problem.badRequest("the path has no \(name)") }
        return value
    }
}

/// A route answered by one call to one op, its reply passed on: declared once, with
/// how a request becomes the op's body (`body`) and how the reply becomes the answer
/// (`reply`). Both are synchronous, so the edge serves a route that reads no body on
/// the connection's event loop (`PassingHandler`), below Hummingbird: a request costs
/// no task and no thread hand-over but the service call's own. One that reads a JSON
/// body is served by Hummingbird, which reads the body (`EdgeRoutes.answer`); routes
/// that make more than one call, or read bytes, are handlers of their own.
struct PassRoute: Sendable {
    let method: HTTPRequest.Method
    let pattern: String
    let op: String
    /// The most bytes of JSON body it reads; nil for a route that reads none.
    let bodyLimit: Int?
    let body: @Sendable (PassRequest) throws -> JSONObject
    let reply: @Sendable (PassRequest, AsyncServiceClient.RawReply) throws -> EdgeReply
    /// The service the op belongs to.
    let service: String
    /// The pattern's segments, each a fixed one or a parameter's name (`{name}`).
    private let segments: [Segment]

    private enum Segment: Sendable {
        case fixed(String)
        case parameter(String)
    }

    init(method: HTTPRequest.Method, pattern: String, op: String, bodyLimit: Int? = nil,
         body: @escaping @Sendable (PassRequest) throws -> JSONObject,
         reply: @escaping @Sendable (PassRequest, AsyncServiceClient.RawReply) throws -> EdgeReply) {
        self.method = method
        self.pattern = pattern
        self.op = op
        self.bodyLimit = bodyLimit
        self.body = body
        self.reply = reply
        service = String(op.prefix { $0 != "." })
        // Told apart once here, not at each request (`match`).
        segments = Self.segments(of: pattern)
    }

    /// The names of the path's parameters, from the segments told apart at `init`
    /// (a route that reads a body asks at each request).
    var parameterNames: [String] { Self.parameterNames(in: segments) }

    /// The names of the parameters (`{name}`) of a path pattern.
    static func parameterNames(in pattern: String) -> [String] {
        parameterNames(in: segments(of: pattern))
    }

    private static func parameterNames(in segments: [Segment]) -> [String] {
        segments.compactMap { segment in
            if case .parameter(let name) = segment { name } else { nil }
        }
    }

    /// A pattern's segments: `{name}` a parameter, anything else fixed.
    private static func segments(of pattern: String) -> [Segment] {
        pattern.split(separator: "/").map { segment in
            segment.first == "{" && segment.last == "}" ? .parameter(String(segment.dropFirst().dropLast())) : .fixed(String(segment))
        }
    }

    /// The path's parameters when `method` and the path's segments (`path`, split at
    /// `/` with empty segments skipped) are this route's. Matched as Hummingbird's
    /// router matches, a parameter as it is sent (not percent-decoded), so a path
    /// means the same whichever serves it.
    func match(_ method: HTTPRequest.Method, _ path: [Substring]) -> [String: String]? {
        guard method == self.method, path.count == segments.count else { return nil }
        // The fixed segments first: they rule out most routes, with nothing made.
        for (expected, segment) in zip(segments, path) {
            if case .fixed(let fixed) = expected, segment != fixed { return nil }
        }
        var parameters: [String: String] = [:]
        for (expected, segment) in zip(segments, path) {
            if case .parameter(let name) = expected { parameters[name] = String(segment) }
        }
        return parameters
    }
}
