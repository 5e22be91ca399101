import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceClient
import Synchronization
import ZeroMQ

/// Where a ZMTP connection goes: `tcp://host:port` or `ipc:///path` (a Unix socket).
enum ZMTPEndpoint: CustomStringConvertible {
    case tcp(host: String, port: Int)
    case ipc(path: String)

    init?(_ endpoint: String) {
        if endpoint.hasPrefix("ipc://") {
            let path = String(endpoint.dropFirst("ipc://".count))
            guard !path.isEmpty else { return nil }
            self = .ipc(path: path)
        } else if endpoint.hasPrefix("tcp://") {
            let address = endpoint.dropFirst("tcp://".count)
            guard let colon = address.lastIndex(of: ":"), let port = Int(address[address.index(after: colon)...]),
                  (1...65_535).contains(port) else { return nil }
            var host = String(address[..<colon])
            if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            guard !host.isEmpty, host != "*" else { return nil }
            self = .tcp(host: host, port: port)
        } else {
            return nil
        }
    }

    var description: String {
        switch self {
        case .tcp(let host, let port): "tcp://\(host):\(port)"
        case .ipc(let path): "ipc://\(path)"
        }
    }
}

/// A service's requests from an edge's event loops over ZMTP written by NIO, one
/// connection per loop, instead of through libzmq: a request goes out on the loop
/// that serves its HTTP request and its reply comes back on that loop, so no thread
/// wakes between them (through libzmq each request crossed to its I/O thread and the
/// link's thread and back: ARCHITECTURE.md, "The edge"). The service's side is
/// unchanged: a libzmq ROUTER sees a DEALER, plaintext (NULL) or CURVE.
///
/// For endpoints over TCP or Unix sockets; `inproc://` goes through `DealerLink`.
public final class ZMTPLink: RequestLink {
    private let connections: [NIOLoopBoundBox<ZMTPConnection>]
    private let indexByLoop: [ObjectIdentifier: Int]
    private let turn = Atomic<UInt>(0)
    private let closed = Atomic<Bool>(false)

    /// Whether `endpoint` can be reached this way.
    public static func supports(_ endpoint: String) -> Bool {
        ZMTPEndpoint(endpoint) != nil
    }

    /// Connects from each loop of `group` (the loops that will call `send`).
    /// - Parameters:
    ///   - curve: the client's keys and the service's public key; nil for plaintext.
    ///   - logger: where a service that ends connections during the handshake is told of.
    public convenience init(service: String, endpoint: String, curve: CurveRole? = nil, timeout: TimeInterval,
                            group: MultiThreadedEventLoopGroup, logger: Logger? = nil) throws {
        try self.init(service: service, endpoint: endpoint, curve: curve, timeout: timeout, group: group, logger: logger,
                      waitingLimit: ZMTPConnection.defaultWaitingLimit)
    }

    /// - Parameter waitingLimit: the current tries each connection keeps while the service is away (tests set it low).
    init(service: String, endpoint: String, curve: CurveRole?, timeout: TimeInterval, group: MultiThreadedEventLoopGroup,
         logger: Logger?, waitingLimit: Int) throws {
        guard let parsed = ZMTPEndpoint(endpoint) else {
            throw ZMTPProtocolError(description: "\(endpoint) is not a tcp:// or ipc:// endpoint")
        }
        var keys: CurveClient.Keys?
        switch curve {
        case nil:
            break
        case .server:
            throw ZMTPProtocolError(description: "a link is a client: it needs a client's CURVE keys")
        case .client(let pair, let serverKey):
            guard let publicKey = Z85.decode(pair.publicKey), let secretKey = Z85.decode(pair.secretKey),
                  let server = Z85.decode(serverKey), [publicKey, secretKey, server].allSatisfy({ $0.count == 32 }) else {
                throw ZMTPProtocolError(description: "the CURVE keys for \(service) are not 32-byte Z85 keys")
            }
            keys = CurveClient.Keys(publicKey: Array(publicKey), secretKey: Array(secretKey), serverKey: Array(server))
        }
        var connections: [NIOLoopBoundBox<ZMTPConnection>] = []
        var indexByLoop: [ObjectIdentifier: Int] = [:]
        for loop in group.makeIterator() {
            let box = NIOLoopBoundBox.makeBoxSendingValue(
                ZMTPConnection(service: service, endpoint: parsed, curve: keys, timeout: timeout, loop: loop, logger: logger,
                               waitingLimit: waitingLimit), eventLoop: loop)
            indexByLoop[ObjectIdentifier(loop)] = connections.count
            connections.append(box)
            loop.execute { box.value.connect() }
        }
        self.connections = connections
        self.indexByLoop = indexByLoop
    }

    deinit { close() }

    /// Sends on the calling loop's connection; a caller off the loops (a task) takes
    /// the loops in turn. `then` runs on that loop.
    public func send(_ frames: [Data], id: String, tries: Int, then: @escaping Completion) {
        if let current = MultiThreadedEventLoopGroup.currentEventLoop, let index = indexByLoop[ObjectIdentifier(current)] {
            return connections[index].value.send(frames, id: id, tries: tries, then: then)
        }
        let box = connections[Int(turn.wrappingAdd(1, ordering: .relaxed).oldValue % UInt(connections.count))]
        box.eventLoop.execute { box.value.send(frames, id: id, tries: tries, then: then) }
    }

    /// Handshakes completed by all connections so far (for tests).
    func handshakes() throws -> Int {
        try connections.reduce(0) { sum, box in sum + (try box.eventLoop.submit { box.value.handshakes }.wait()) }
    }

    /// Fails what is in flight with `unavailable` and closes the connections.
    public func close() {
        // Once: the loops may be gone by the time the link is let go.
        guard !closed.exchange(true, ordering: .relaxed) else { return }
        for box in connections {
            if box.eventLoop.inEventLoop {
                box.value.close()
            } else if MultiThreadedEventLoopGroup.currentEventLoop != nil {
                // One loop may not wait for another.
                box.eventLoop.execute { box.value.close() }
            } else {
                try? box.eventLoop.submit { box.value.close() }.wait()
            }
        }
    }
}
