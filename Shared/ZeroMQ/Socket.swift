import CZeroMQ
import Foundation

/// A libzmq socket.
///
/// libzmq sockets are not thread-safe, so `Socket` is not `Sendable`: make it on the
/// thread that uses it and close it there.
public final class Socket {
    let handle: UnsafeMutableRawPointer
    public let type: SocketType
    private var isClosed = false

    init(context: Context, type: SocketType) throws(ZMQError) {
        guard let handle = zmq_socket(context.handle, type.rawValue) else {
            throw ZMQError(operation: "zmq_socket(\(type))")
        }
        self.handle = handle
        self.type = type
    }

    deinit { close() }

    public func bind(_ endpoint: String) throws(ZMQError) {
        try check("zmq_bind(\(endpoint))") { zmq_bind(handle, endpoint) }
    }

    public func connect(_ endpoint: String) throws(ZMQError) {
        try check("zmq_connect(\(endpoint))") { zmq_connect(handle, endpoint) }
    }

    public func unbind(_ endpoint: String) throws(ZMQError) {
        try check("zmq_unbind(\(endpoint))") { zmq_unbind(handle, endpoint) }
    }

    public func disconnect(_ endpoint: String) throws(ZMQError) {
        try check("zmq_disconnect(\(endpoint))") { zmq_disconnect(handle, endpoint) }
    }

    /// Closes the socket; queued outgoing messages are kept for the linger period.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        zmq_close(handle)
    }

    // MARK: Sending

    /// Sends one message of one or more frames.
    ///
    /// - Parameter wait: when false, a send that would block returns false instead.
    /// - Returns: false when the message was not queued because the socket would block
    ///   (no peer, high-water mark, or the send timeout ran out).
    @discardableResult
    public func send(_ frames: [Data], wait: Bool = true) throws(ZMQError) -> Bool {
        precondition(!frames.isEmpty, "a ZeroMQ message has at least one frame")
        for (index, frame) in frames.enumerated() {
            var flags: Int32 = index < frames.count - 1 ? ZMQ_SNDMORE : 0
            if !wait { flags |= ZMQ_DONTWAIT }
            let sent = try sendFrame(frame, flags: flags)
            // libzmq queues a message atomically, so only the first frame can block.
            if !sent { return false }
        }
        return true
    }

    @discardableResult
    public func send(_ frame: Data, wait: Bool = true) throws(ZMQError) -> Bool {
        try sendFrame(frame, flags: wait ? 0 : ZMQ_DONTWAIT)
    }

    private func sendFrame(_ frame: Data, flags: Int32) throws(ZMQError) -> Bool {
        while true {
            let result = frame.withUnsafeBytes { zmq_send(handle, $0.baseAddress, $0.count, flags) }
            if result >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN { return false }
            throw ZMQError(operation: "zmq_send", code: code)
        }
    }

    // MARK: Receiving

    /// Receives one whole message, all its frames.
    ///
    /// - Parameter wait: when false, returns nil at once if no message is queued.
    /// - Returns: nil when nothing arrived in time (the receive timeout, or `wait: false`).
    public func receiveMessage(wait: Bool = true) throws(ZMQError) -> [Data]? {
        try receive(wait: wait, limits: nil)?.frames
    }

    /// Receives one message, copying at most `limits` of it: the frames past either
    /// bound are taken off the socket and dropped without being copied, and the
    /// message says it was cut. Also gives the peer's ZAP user id.
    ///
    /// libzmq itself holds a whole message before it delivers the first frame (each
    /// frame bounded by `ZMQ_MAXMSGSIZE`, the queue by the high-water mark); this
    /// bounds what the process copies and keeps of it.
    public func receive(wait: Bool = true, limits: MessageLimits?) throws(ZMQError) -> ReceivedMessage? {
        var message = zmq_msg_t()
        zmq_msg_init(&message)
        defer { zmq_msg_close(&message) }
        guard try receiveFrame(&message, flags: wait ? 0 : ZMQ_DONTWAIT) else { return nil }
        var received = ReceivedMessage(frames: [], peerKey: nil, truncated: false)
        var bytes = 0
        while true {
            // The ZAP handler's user id (Hereabouts': the peer's Z85 public key) rides on
            // the peer's frames; libzmq 4.3.4 leaves it off a ROUTER's routing-id frame
            // when a poll fetched the message first, so it is read from each until found.
            if received.peerKey == nil, let userID = zmq_msg_gets(&message, "User-Id") {
                received.peerKey = String(cString: userID)
            }
            let size = zmq_msg_size(&message)
            if let limits, received.truncated || received.frames.count >= limits.maxFrames || bytes + size > limits.maxBytes {
                received.truncated = true
            } else {
                received.frames.append(size == 0 ? Data() : Data(bytes: zmq_msg_data(&message), count: size))
                bytes += size
            }
            guard zmq_msg_more(&message) == 1 else { return received }
            // The rest of a multipart message is already here: libzmq delivers atomically.
            guard try receiveFrame(&message, flags: 0) else { return received }
        }
    }

    private func receiveFrame(_ message: inout zmq_msg_t, flags: Int32) throws(ZMQError) -> Bool {
        while true {
            if zmq_msg_recv(&message, handle, flags) >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN { return false }
            throw ZMQError(operation: "zmq_msg_recv", code: code)
        }
    }
}

/// Bounds on what `Socket.receive` copies of one message.
public struct MessageLimits: Sendable, Equatable {
    public var maxFrames: Int
    public var maxBytes: Int

    public init(maxFrames: Int, maxBytes: Int) {
        self.maxFrames = maxFrames
        self.maxBytes = maxBytes
    }
}

/// One message as `Socket.receive` read it.
public struct ReceivedMessage: Sendable {
    /// The frames within the limits, in order.
    public var frames: [Data]
    /// The user id the context's ZAP handler gave the peer (the Z85 public key it
    /// was admitted with); nil for a plaintext peer.
    public var peerKey: String?
    /// True when frames past the limits were dropped.
    public var truncated: Bool
}
