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

    public init(endpoint: String, context: Context = .shared) throws {
        let socket = try context.makeSocket(.publish)
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
