import Wire

/// How each client surfaces a protocol error: the one table of it, for `here`'s exit
/// codes and the edge's HTTP statuses (EDGE.md's table).
extension ErrorCode {
    /// `here`'s exit code: 1 the user's mistake, 2 a service unavailable, 3 internal.
    public var exitCode: Int32 {
        switch self {
        case .unavailable: 2
        case .internal: 3
        default: 1
        }
    }

    /// The HTTP status of a problem reply. `conflict` is 409 here; a stale `If-Match`
    /// (a `conflict` on `ifVersion`) is the edge's 412.
    public var httpStatus: Int {
        switch self {
        case .badRequest: 400
        case .invalidArgument: 422
        case .unauthenticated: 401
        case .permissionDenied: 403
        case .notFound, .unknownOp: 404
        case .alreadyExists, .conflict: 409
        case .tooLarge: 413
        case .rateLimited: 429
        case .unavailable: 503
        default: 500
        }
    }

    /// The problem's title: the code in words.
    public var title: String {
        switch self {
        case .badRequest: "Bad request"
        case .unknownOp: "Not found"
        case .invalidArgument: "Invalid argument"
        case .unauthenticated: "Unauthenticated"
        case .permissionDenied: "Permission denied"
        case .notFound: "Not found"
        case .alreadyExists: "Already exists"
        case .conflict: "Conflict"
        case .tooLarge: "Too large"
        case .rateLimited: "Rate limited"
        case .unavailable: "Unavailable"
        default: "Internal error"
        }
    }
}
