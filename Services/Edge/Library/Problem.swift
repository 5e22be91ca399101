import Foundation
import HTTPTypes
import Hummingbird
import StackClient
import Wire

/// An error as the edge answers it: RFC 9457 problem details, with the protocol's
/// error code and, where there is one, the field.
///
/// `{"title":"Invalid argument","status":422,"code":"invalid_argument",
///   "detail":"radius must be 1–500000 metres","field":"radius"}`
struct Problem: Error, Sendable {
    var status: HTTPResponse.Status
    var code: String
    var detail: String
    var field: String?
    /// With 429 and 503: `Retry-After`, in seconds (rounded up).
    var retryAfterSeconds: Int?
    /// With 405: the methods the route takes.
    var allow: [HTTPRequest.Method] = []

    static let contentType = "application/problem+json"

    /// A service's error, by EDGE.md's table.
    init(_ error: ServiceError) {
        status = .init(code: error.code.httpStatus)
        code = error.code == .unknownOp ? ErrorCode.notFound.rawValue : error.code.rawValue
        detail = error.message
        field = error.field
        switch error.code {
        case .rateLimited: retryAfterSeconds = max(1, Int(((Double(error.retryAfterMs ?? 1000)) / 1000).rounded(.up)))
        case .unavailable: retryAfterSeconds = 1
        default: retryAfterSeconds = nil
        }
    }

    init(status: HTTPResponse.Status, code: ErrorCode, _ detail: String, field: String? = nil) {
        self.init(ServiceError(code: code, message: detail, field: field))
        self.status = status
    }

    static func badRequest(_ detail: String) -> Problem {
        Problem(ServiceError.badRequest(detail))
    }

    static func invalidArgument(_ field: String, _ detail: String) -> Problem {
        Problem(ServiceError.invalidArgument(field: field, detail))
    }

    static func notFound(_ detail: String) -> Problem {
        Problem(ServiceError.notFound(detail))
    }

    static func tooLarge(_ detail: String) -> Problem {
        Problem(ServiceError.tooLarge(detail))
    }

    var title: String {
        switch status.code {
        case 405: "Method not allowed"
        case 412: "Precondition failed"
        case 415: "Unsupported media type"
        default: ErrorCode(code).title
        }
    }

    var body: Data {
        var members: [(key: String, value: JSONValue)] = [
            ("title", .string(title)), ("status", .number(.integer(Int64(status.code)))), ("code", .string(code)),
            ("detail", .string(detail)),
        ]
        if let field { members.append(("field", .string(field))) }
        return JSONWriter.data(.object(JSONObject(members)))
    }

    var response: Response { reply.response }

    var reply: EdgeReply { EdgeReply(status: status, headers: headers, body: ByteBuffer(bytes: body)) }

    /// The whole response as HTTP/1.1 bytes, closing the connection: for answers
    /// written below Hummingbird (a refused WebSocket upgrade).
    var http1Bytes: ByteBuffer {
        let body = self.body
        var head = "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\n"
        for field in headers where field.name != .connection { head += "\(field.name): \(field.value)\r\n" }
        head += "Connection: close\r\nContent-Length: \(body.count)\r\n\r\n"
        var buffer = ByteBuffer(string: head)
        buffer.writeBytes(body)
        return buffer
    }

    private var headers: HTTPFields {
        var headers: HTTPFields = [.contentType: Self.contentType]
        if let retryAfterSeconds { headers[.retryAfter] = "\(retryAfterSeconds)" }
        if status == .unauthorized { headers[.wwwAuthenticate] = "Bearer" }
        if !allow.isEmpty { headers[.allow] = allow.map(\.rawValue).joined(separator: ", ") }
        // A body refused for its size is not read on: the connection closes after this.
        if status == .contentTooLarge { headers[.connection] = "close" }
        return headers
    }
}
