import Foundation
import ServiceClient
import Synchronization
import ZeroMQ

/// CURVE for a service's server sockets: its own role and whom it admits.
public struct ServerSecurity: Sendable, Equatable {
    public var role: CurveRole
    /// Z85 public keys of the components that may connect.
    public var allowedKeys: [String]

    public init(role: CurveRole, allowedKeys: [String]) {
        self.role = role
        self.allowedKeys = allowedKeys
    }

    /// From the settings' keys; nil (plaintext) without them.
    public init?(_ settings: ServiceSettings) {
        guard let keys = settings.keys else { return nil }
        self.init(role: keys.server, allowedKeys: keys.allowedKeys)
    }

    private static let handlers = Mutex<[ObjectIdentifier: (ZAPAuthenticator, Set<String>)]>([:])

    /// Applies CURVE to a server socket, with the context's ZAP handler running first
    /// (one per context; a later server in the same context must admit the same keys).
    func secure(_ socket: Socket, in context: Context) throws {
        try Self.handlers.withLock { handlers in
            let id = ObjectIdentifier(context)
            if let (_, keys) = handlers[id] {
                guard keys == Set(allowedKeys) else {
                    throw KeyRingError("two servers in one process admit different keys")
                }
            } else {
                handlers[id] = (try ZAPAuthenticator(allowing: allowedKeys, context: context), Set(allowedKeys))
            }
        }
        try socket.secure(role)
    }
}
