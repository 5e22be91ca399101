/// An error code of the protocol. A struct rather than an enum so a client keeps
/// working when a newer service sends a code it does not know.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    public static let badRequest = ErrorCode("bad_request")
    public static let unknownOp = ErrorCode("unknown_op")
    public static let invalidArgument = ErrorCode("invalid_argument")
    public static let unauthenticated = ErrorCode("unauthenticated")
    public static let permissionDenied = ErrorCode("permission_denied")
    public static let notFound = ErrorCode("not_found")
    public static let alreadyExists = ErrorCode("already_exists")
    public static let conflict = ErrorCode("conflict")
    public static let tooLarge = ErrorCode("too_large")
    public static let rateLimited = ErrorCode("rate_limited")
    public static let unavailable = ErrorCode("unavailable")
    public static let `internal` = ErrorCode("internal")

    /// Replies with these codes describe the moment, not the request, so they are
    /// never kept for a retried request id.
    public var isTransient: Bool {
        self == .unavailable || self == .internal || self == .rateLimited
    }
}

/// The `error` object of a failed reply, and the one error type handlers throw.
///
/// Anything else a handler throws is logged and answered as `internal`, with no
/// detail in the message.
public struct ServiceError: Error, Sendable, Equatable, Codable, CustomStringConvertible {
    public var code: ErrorCode
    public var message: String
    /// The offending field's path, with `invalid_argument`.
    public var field: String?
    /// With `rate_limited`: how long to wait before trying again.
    public var retryAfterMs: Int?
    /// What the log and the local user may see beyond `message`: an endpoint, a file.
    /// Never sent in a reply (not encoded), so a reply says nothing of the inside.
    public var detail: String?

    public init(code: ErrorCode, message: String, field: String? = nil, retryAfterMs: Int? = nil, detail: String? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.retryAfterMs = retryAfterMs
        self.detail = detail
    }

    enum CodingKeys: String, CodingKey { case code, message, field, retryAfterMs }

    public var description: String {
        var text = "\(code): \(message)"
        if let detail { text += " (\(detail))" }
        if let field { text += " [field \(field)]" }
        if let retryAfterMs { text += " [retry after \(retryAfterMs) ms]" }
        return text
    }

    public static func badRequest(_ message: String) -> ServiceError {
        ServiceError(code: .badRequest, message: message)
    }

    public static func unknownOp(_ op: String) -> ServiceError {
        ServiceError(code: .unknownOp, message: "unknown op \"\(op)\"")
    }

    public static func invalidArgument(field: String, _ message: String) -> ServiceError {
        ServiceError(code: .invalidArgument, message: message, field: field)
    }

    public static func unauthenticated(_ message: String) -> ServiceError {
        ServiceError(code: .unauthenticated, message: message)
    }

    public static func permissionDenied(_ message: String) -> ServiceError {
        ServiceError(code: .permissionDenied, message: message)
    }

    public static func notFound(_ message: String) -> ServiceError {
        ServiceError(code: .notFound, message: message)
    }

    public static func alreadyExists(_ message: String, field: String? = nil) -> ServiceError {
        ServiceError(code: .alreadyExists, message: message, field: field)
    }

    public static func conflict(_ message: String) -> ServiceError {
        ServiceError(code: .conflict, message: message)
    }

    public static func tooLarge(_ message: String) -> ServiceError {
        ServiceError(code: .tooLarge, message: message)
    }

    public static func rateLimited(_ message: String, retryAfterMs: Int) -> ServiceError {
        ServiceError(code: .rateLimited, message: message, retryAfterMs: max(1, retryAfterMs))
    }

    /// `message` goes to the client; `detail` (where, how often) only to logs.
    public static func unavailable(_ message: String, detail: String? = nil) -> ServiceError {
        ServiceError(code: .unavailable, message: message, detail: detail)
    }

    /// The only message an `internal` reply carries: details go to the log.
    public static let `internal` = ServiceError(code: .internal, message: "internal error")
}
