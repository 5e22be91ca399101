import Wire

/// Who may call an op, as the protocol's token column says.
public enum Access: Sendable, Equatable {
    /// No token needed (one that is sent is still checked).
    case anyone
    /// Any valid token, anonymous users included.
    case user
    /// A token of a non-anonymous user; an anonymous one gets `permission_denied`.
    case registered
}

/// How a service treats a retried request id of this op.
public enum Effect: Sendable, Equatable {
    /// Changes nothing: answered afresh every time.
    case read
    /// Changes state: the reply is kept under (op, id, caller) and given again to a
    /// retry, which changes nothing.
    case write
    /// Changes state and hands out tokens, which are never stored: a retry gets the
    /// same user and session with a freshly issued token pair. Only for ops whose
    /// request proves its sender (a password, a token).
    case sessionWrite
    /// Changes state, and every request is new, a retry included: nothing is kept
    /// and nothing replayed. For ops where a replayed id must not hand out a session:
    /// `auth.anonymous` (nothing in it shows that a retry comes from the first
    /// sender) and `auth.refresh` (a second use of a refresh token is theft). Clients
    /// send these once and do not retry them on a timeout.
    case fresh
}

/// One op of the protocol: its name, the types of its body and reply body, and the
/// rules every service and client applies to it.
public struct Op<Request: Codable & Sendable, Response: Codable & Sendable>: Sendable {
    public let name: String
    public let access: Access
    public let effect: Effect
    /// Frames after frame 0 the op takes (images, avatars).
    public let maxAttachments: Int
    public let maxFrame0Bytes: Int

    public init(_ name: String, access: Access, effect: Effect,
                maxAttachments: Int = 0, maxFrame0Bytes: Int = Limits.requestFrame0Bytes) {
        self.name = name
        self.access = access
        self.effect = effect
        self.maxAttachments = maxAttachments
        self.maxFrame0Bytes = maxFrame0Bytes
    }

    /// The service an op belongs to: the part of its name before the first dot.
    public var service: String { String(name.prefix(while: { $0 != "." })) }
}

/// A request body that checks the protocol's rules beyond its JSON shape (lengths,
/// ranges, formats). Services use `validated()` after decoding, so a handler sees
/// only valid input; clients may run `validate()` before sending.
public protocol ValidatedBody: Codable, Sendable {
    /// Throws `invalid_argument` naming the first field that breaks a rule.
    func validate() throws
    /// The body as a service uses it: checked, and normalised where the protocol
    /// says so (upper-cased codes, tags without repeats). By default, `validate()`
    /// and the body as it is.
    func validated() throws -> Self
}

extension ValidatedBody {
    public func validate() throws {}

    public func validated() throws -> Self {
        try validate()
        return self
    }
}

/// A body with no fields: `{}`.
public struct Empty: ValidatedBody, Equatable {
    public init() {}
}
