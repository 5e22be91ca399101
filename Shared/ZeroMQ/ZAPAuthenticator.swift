import CZeroMQ
import Foundation
import Synchronization

/// The ZAP handler (RFC 27) of a context: admits a CURVE client only when its public
/// key is on the allow-list, and refuses every other mechanism.
///
/// A CURVE server socket asks it about each new connection on
/// `inproc://zeromq.zap.01`. Servers set `zapEnforceDomain`, so without a running
/// handler a connection is refused, never admitted by default.
public final class ZAPAuthenticator: Sendable {
    public static let endpoint = "inproc://zeromq.zap.01"
    /// The domain servers set (`zapDomain`) and this handler answers for.
    public static let domain = "hereabouts"

    private let allowed: Set<Data>
    private let running = Atomic<Bool>(true)
    private let stopped = DispatchSemaphore(value: 0)

    /// Binds the handler in `context` and starts answering; `allowedKeys` are Z85
    /// public keys (a malformed one is an error).
    public init(allowing allowedKeys: [String], context: Context = .shared) throws {
        var allowed = Set<Data>()
        for key in allowedKeys {
            guard let bytes = Z85.decode(key), bytes.count == 32 else { throw ZMQError(operation: "Z85 decode of an allowed key", code: EINVAL) }
            allowed.insert(bytes)
        }
        self.allowed = allowed
        let socket = try context.makeSocket(.reply)
        try socket.set(.linger(milliseconds: 0))
        try socket.set(.receiveTimeout(milliseconds: 200))
        try socket.bind(Self.endpoint)
        let handler = SocketBox(socket)
        Thread.detachNewThread { [self] in
            defer {
                handler.socket.close()
                stopped.signal()
            }
            while running.load(ordering: .relaxed) {
                guard let request = try? handler.socket.receiveMessage() else { continue }
                _ = try? handler.socket.send(reply(to: request))
            }
        }
    }

    /// Stops answering (new CURVE connections are then refused) and unbinds.
    public func stop() {
        guard running.exchange(false, ordering: .relaxed) else { return }
        stopped.wait()
    }

    /// RFC 27: version, request id, domain, address, identity, mechanism, credentials…
    func reply(to request: [Data]) -> [Data] {
        let version = Data("1.0".utf8)
        guard request.count >= 6, request[0] == version else {
            return [version, request.count > 1 ? request[1] : Data(), Data("500".utf8), Data("malformed ZAP request".utf8), Data(), Data()]
        }
        let id = request[1], mechanism = String(decoding: request[5], as: UTF8.self)
        let domainMatches = String(decoding: request[2], as: UTF8.self) == Self.domain
        if domainMatches, mechanism == "CURVE", request.count >= 7, allowed.contains(request[6]) {
            return [version, id, Data("200".utf8), Data("OK".utf8), Data((Z85.encode(request[6]) ?? "").utf8), Data()]
        }
        return [version, id, Data("400".utf8), Data("not an allowed key".utf8), Data(), Data()]
    }
}

/// A socket handed to the one thread that uses it from then on.
private final class SocketBox: @unchecked Sendable {
    let socket: Socket
    init(_ socket: Socket) { self.socket = socket }
}
