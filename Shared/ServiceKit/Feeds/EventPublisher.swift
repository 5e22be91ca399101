import Foundation
import Logging
import Synchronization
import Wire
import ZeroMQ

/// A service's PUB socket, shared by every thread that publishes.
///
/// ZeroMQ sockets are not thread-safe, but one may be used from several threads
/// when each use is fenced; the mutex gives that, and a PUB send never blocks.
public final class EventPublisher: Sendable {
    private let socket: Mutex<Socket?>
    public let endpoint: String

    public init(endpoint: String, security: ServerSecurity? = nil, context: Context = .shared) throws {
        let socket = try context.makeSocket(.publish)
        if let security { try security.secure(socket, in: context) }
        try socket.set(.linger(milliseconds: 200))
        try socket.set(.sendHighWaterMark(messages: 100_000))
        try socket.set(.maxMessageSize(bytes: Int64(Wire.Limits.messageBytes)))
        try socket.bind(endpoint)
        self.endpoint = socket.lastEndpoint
        self.socket = Mutex(socket)
    }

    /// Sends a topic frame and a body frame; dropped when no subscriber keeps up.
    public func publish(topic: String, body: Data) {
        socket.withLock { socket in
            _ = try? socket?.send([Data(topic.utf8), body], wait: false)
        }
    }

    public func close() {
        socket.withLock { socket in
            socket?.close()
            socket = nil
        }
    }
}

/// A service's PUB socket as its handlers see it: opened when the service starts,
/// closed when it stops, and a quiet no-op outside that time.
public final class EventChannel: Sendable {
    private let publisher = Mutex<EventPublisher?>(nil)

    public init() {}

    public func open(endpoint: String, security: ServerSecurity? = nil) throws {
        let opened = try EventPublisher(endpoint: endpoint, security: security)
        publisher.withLock { $0 = opened }
    }

    public func close() {
        publisher.withLock { publisher in
            publisher?.close()
            publisher = nil
        }
    }

    /// Publishes `value` as JSON on `topic`; nothing when the channel is closed.
    public func publish(topic: String, _ value: some Encodable) {
        guard let publisher = publisher.withLock({ $0 }), let body = try? JSONValueEncoder().encodeData(value) else { return }
        publisher.publish(topic: topic, body: body)
    }
}
