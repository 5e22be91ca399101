import Foundation

/// Every failure HereaboutsKit reports: the edge's problem details (RFC 9457) as they
/// came, or what went wrong before an answer arrived.
///
/// `code` and `field` are stable, for the app to branch on and translate; `detail` is
/// English, for logs and developers.
public struct HereaboutsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The protocol's error code: `bad_request`, `unauthenticated`, `permission_denied`,
    /// `not_found`, `conflict`, `already_exists`, `invalid_argument`, `too_large`,
    /// `rate_limited`, `unavailable`, `internal`; and two of the kit's own:
    /// `network` (no answer came) and `signed_out` (the call needs a session and
    /// there is none, or its refresh token was refused).
    public var code: String
    /// The request's member the error is about, where there is one (e.g. `email`).
    public var field: String?
    public var detail: String
    /// The HTTP status; 0 when no answer came.
    public var status: Int
    /// How long to wait before trying again, from `Retry-After`.
    public var retryAfter: TimeInterval?

    public init(code: String, field: String? = nil, detail: String, status: Int = 0, retryAfter: TimeInterval? = nil) {
        self.code = code
        self.field = field
        self.detail = detail
        self.status = status
        self.retryAfter = retryAfter
    }

    public var description: String {
        "\(code)\(field.map { " (\($0))" } ?? ""): \(detail)"
    }

    static func signedOut(_ detail: String) -> HereaboutsError {
        HereaboutsError(code: "signed_out", detail: detail, status: 401)
    }

    static func network(_ error: any Error) -> HereaboutsError {
        HereaboutsError(code: "network", detail: "no answer from the server: \(error.localizedDescription)")
    }

    static func unexpected(_ what: String, status: Int = 0) -> HereaboutsError {
        HereaboutsError(code: "internal", detail: "the server answered in a way HereaboutsKit does not know: \(what)", status: status)
    }
}
