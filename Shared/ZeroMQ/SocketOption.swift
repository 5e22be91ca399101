import CZeroMQ
import Foundation

/// The socket options Hereabouts sets. Times are milliseconds, sizes bytes, as libzmq
/// takes them; `-1` means "no limit" where libzmq says so.
public enum SocketOption: Sendable {
    /// How long `close` keeps trying to deliver queued messages.
    case linger(milliseconds: Int32)
    /// A peer sending a larger frame is disconnected.
    case maxMessageSize(bytes: Int64)
    case sendTimeout(milliseconds: Int32)
    case receiveTimeout(milliseconds: Int32)
    case sendHighWaterMark(messages: Int32)
    case receiveHighWaterMark(messages: Int32)
    /// ZMTP heartbeats: a PING every interval; the connection is dropped when no
    /// traffic arrives within the timeout; the peer is asked to use the TTL.
    case heartbeatInterval(milliseconds: Int32)
    case heartbeatTimeout(milliseconds: Int32)
    case heartbeatTimeToLive(milliseconds: Int32)
    case reconnectInterval(milliseconds: Int32)
    case reconnectIntervalMax(milliseconds: Int32)
    /// Queue messages only to completed connections.
    case immediate(Bool)
    /// A ROUTER fails a send to an unknown peer instead of dropping it.
    case routerMandatory(Bool)
    case routingID(Data)
    case subscribe(Data)
    case unsubscribe(Data)
    /// This socket is the CURVE server; clients must present `curveServerKey`.
    case curveServer(Bool)
    /// Keys as 40-character Z85 text.
    case curvePublicKey(String)
    case curveSecretKey(String)
    case curveServerKey(String)
    case zapDomain(String)
    /// With it, a CURVE or PLAIN socket whose ZAP handler is missing refuses clients.
    case zapEnforceDomain(Bool)
    /// An XPUB decides each subscription itself: it receives every subscription
    /// message and applies the ones it accepts with `subscribe` (to the peer that
    /// sent the last one).
    case extendedPublishManual(Bool)
}

extension Socket {
    public func set(_ option: SocketOption) throws(ZMQError) {
        switch option {
        case .linger(let value): try setInt32(ZMQ_LINGER, value, "ZMQ_LINGER")
        case .maxMessageSize(let value): try setInt64(ZMQ_MAXMSGSIZE, value, "ZMQ_MAXMSGSIZE")
        case .sendTimeout(let value): try setInt32(ZMQ_SNDTIMEO, value, "ZMQ_SNDTIMEO")
        case .receiveTimeout(let value): try setInt32(ZMQ_RCVTIMEO, value, "ZMQ_RCVTIMEO")
        case .sendHighWaterMark(let value): try setInt32(ZMQ_SNDHWM, value, "ZMQ_SNDHWM")
        case .receiveHighWaterMark(let value): try setInt32(ZMQ_RCVHWM, value, "ZMQ_RCVHWM")
        case .heartbeatInterval(let value): try setInt32(ZMQ_HEARTBEAT_IVL, value, "ZMQ_HEARTBEAT_IVL")
        case .heartbeatTimeout(let value): try setInt32(ZMQ_HEARTBEAT_TIMEOUT, value, "ZMQ_HEARTBEAT_TIMEOUT")
        case .heartbeatTimeToLive(let value): try setInt32(ZMQ_HEARTBEAT_TTL, value, "ZMQ_HEARTBEAT_TTL")
        case .reconnectInterval(let value): try setInt32(ZMQ_RECONNECT_IVL, value, "ZMQ_RECONNECT_IVL")
        case .reconnectIntervalMax(let value): try setInt32(ZMQ_RECONNECT_IVL_MAX, value, "ZMQ_RECONNECT_IVL_MAX")
        case .immediate(let value): try setInt32(ZMQ_IMMEDIATE, value ? 1 : 0, "ZMQ_IMMEDIATE")
        case .routerMandatory(let value): try setInt32(ZMQ_ROUTER_MANDATORY, value ? 1 : 0, "ZMQ_ROUTER_MANDATORY")
        case .routingID(let value): try setBytes(ZMQ_ROUTING_ID, value, "ZMQ_ROUTING_ID")
        case .subscribe(let value): try setBytes(ZMQ_SUBSCRIBE, value, "ZMQ_SUBSCRIBE")
        case .unsubscribe(let value): try setBytes(ZMQ_UNSUBSCRIBE, value, "ZMQ_UNSUBSCRIBE")
        case .curveServer(let value): try setInt32(ZMQ_CURVE_SERVER, value ? 1 : 0, "ZMQ_CURVE_SERVER")
        case .curvePublicKey(let key): try setZ85Key(ZMQ_CURVE_PUBLICKEY, key, "ZMQ_CURVE_PUBLICKEY")
        case .curveSecretKey(let key): try setZ85Key(ZMQ_CURVE_SECRETKEY, key, "ZMQ_CURVE_SECRETKEY")
        case .curveServerKey(let key): try setZ85Key(ZMQ_CURVE_SERVERKEY, key, "ZMQ_CURVE_SERVERKEY")
        case .zapDomain(let domain): try setBytes(ZMQ_ZAP_DOMAIN, Data(domain.utf8), "ZMQ_ZAP_DOMAIN")
        case .zapEnforceDomain(let value): try setInt32(ZMQ_ZAP_ENFORCE_DOMAIN, value ? 1 : 0, "ZMQ_ZAP_ENFORCE_DOMAIN")
        case .extendedPublishManual(let value): try setInt32(ZMQ_XPUB_MANUAL, value ? 1 : 0, "ZMQ_XPUB_MANUAL")
        }
    }

    /// The file descriptor that becomes readable when the socket may have work
    /// (`ZMQ_FD`), for waiting on it with `poll` where the socket itself is shared
    /// between threads under a lock. It signals edge-wise: once it did, read
    /// `hasInput` or receive until nothing is left, or it will not signal again.
    public var fileDescriptor: Int32 {
        var descriptor: Int32 = -1
        var size = MemoryLayout<Int32>.size
        zmq_getsockopt(handle, ZMQ_FD, &descriptor, &size)
        return descriptor
    }

    /// Whether a message can be received now (`ZMQ_EVENTS` has `ZMQ_POLLIN`). Any
    /// call on the socket (a send too) may take the signal off `fileDescriptor`, so
    /// one that does checks this before it lets go of the socket.
    public var hasInput: Bool {
        var events: Int32 = 0
        var size = MemoryLayout<Int32>.size
        guard zmq_getsockopt(handle, ZMQ_EVENTS, &events, &size) == 0 else { return false }
        return events & Int32(ZMQ_POLLIN) != 0
    }

    /// The endpoint the socket last bound or connected, with the port a `tcp://…:*`
    /// bind was given.
    public var lastEndpoint: String {
        var buffer = [CChar](repeating: 0, count: 1024)
        var size = buffer.count
        guard zmq_getsockopt(handle, ZMQ_LAST_ENDPOINT, &buffer, &size) == 0 else { return "" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private func setInt32(_ name: Int32, _ value: Int32, _ label: String) throws(ZMQError) {
        var value = value
        try check("zmq_setsockopt(\(label))") {
            zmq_setsockopt(handle, name, &value, MemoryLayout<Int32>.size)
        }
    }

    private func setInt64(_ name: Int32, _ value: Int64, _ label: String) throws(ZMQError) {
        var value = value
        try check("zmq_setsockopt(\(label))") {
            zmq_setsockopt(handle, name, &value, MemoryLayout<Int64>.size)
        }
    }

    private func setBytes(_ name: Int32, _ value: Data, _ label: String) throws(ZMQError) {
        try check("zmq_setsockopt(\(label))") {
            value.withUnsafeBytes { zmq_setsockopt(handle, name, $0.baseAddress, $0.count) }
        }
    }

    /// libzmq takes a Z85 key as 40 characters followed by a NUL.
    private func setZ85Key(_ name: Int32, _ key: String, _ label: String) throws(ZMQError) {
        guard key.utf8.count == 40 else { throw ZMQError(operation: "zmq_setsockopt(\(label))", code: EINVAL) }
        try check("zmq_setsockopt(\(label))") {
            key.withCString { zmq_setsockopt(handle, name, $0, 41) }
        }
    }
}
