import Foundation
import ServiceClient
import Synchronization
import ZeroMQ

/// What a connected peer may do, by the CURVE key it was admitted with.
public enum PeerRole: Sendable, Equatable {
    /// A service (or the edge): may read change feeds and subscribe to any topic.
    case service
    /// An operator's tool (`here`): calls ops like any client, and sees a user's
    /// events only with that user's token.
    case `operator`
}

/// CURVE for a service's server sockets: its own role and whom it admits.
public struct ServerSecurity: Sendable, Equatable {
    public var role: CurveRole
    /// Z85 public keys of the components that may connect.
    public var allowedKeys: [String]
    /// Those of them that are services (see `PeerRole`).
    public var serviceKeys: Set<String>

    public init(role: CurveRole, allowedKeys: [String], serviceKeys: Set<String>) {
        self.role = role
        self.allowedKeys = allowedKeys
        self.serviceKeys = serviceKeys
    }

    /// From the settings' keys; nil (plaintext) without them.
    public init?(_ settings: ServiceSettings) {
        guard let keys = settings.keys else { return nil }
        self.init(role: keys.server, allowedKeys: keys.allowedKeys, serviceKeys: keys.serviceKeys)
    }

    /// The role of a peer admitted with `peerKey` (the ZAP user id of its messages).
    public func role(ofPeerKey peerKey: String?) -> PeerRole {
        guard let peerKey, serviceKeys.contains(peerKey) else { return .operator }
        return .service
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

    /// Secures a server socket with `security`, or, without it, allows only an
    /// endpoint that no other machine can reach: plaintext trusts every peer (each
    /// has the service role), so it must never face a network.
    static func secure(_ socket: Socket, with security: ServerSecurity?, endpoint: String, in context: Context) throws {
        if let security {
            try security.secure(socket, in: context)
        } else {
            try requireLocal(endpoint)
        }
    }

    /// Throws unless `endpoint` is `ipc://`, `inproc://`, or TCP on a loopback address.
    static func requireLocal(_ endpoint: String) throws {
        guard !isLocal(endpoint) else { return }
        throw KeyRingError("\(endpoint) can be reached from other machines, and without CURVE keys anyone there could "
                           + "call the service: bind to 127.0.0.1 (or ipc://), or set \(KeyRing.environmentVariable)")
    }

    static func isLocal(_ endpoint: String) -> Bool {
        if endpoint.hasPrefix("ipc://") || endpoint.hasPrefix("inproc://") { return true }
        guard endpoint.hasPrefix("tcp://") else { return false }
        let address = endpoint.dropFirst("tcp://".count)
        // `host:port`, `[v6]:port`; a `;` names a source address to connect from.
        guard let colon = address.lastIndex(of: ":") else { return false }
        var host = address[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}
