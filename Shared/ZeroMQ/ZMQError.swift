import CZeroMQ

/// A failed libzmq call: the `errno` it set and libzmq's own words for it.
public struct ZMQError: Error, Sendable, Equatable, CustomStringConvertible {
    public let code: Int32
    public let message: String
    /// The call that failed, for the log line.
    public let operation: String

    init(operation: String, code: Int32 = zmq_errno()) {
        self.code = code
        self.operation = operation
        self.message = String(cString: zmq_strerror(code))
    }

    public var description: String { "\(operation): \(message) (errno \(code))" }

    /// The context was terminated while the call waited: the owner is shutting down.
    public var isContextTerminated: Bool { code == ETERM }
    /// A non-blocking call had nothing to do, or a timeout ran out.
    public var isWouldBlock: Bool { code == EAGAIN }
}

/// Runs a libzmq call that returns -1 on failure, retrying when a signal interrupted it.
@discardableResult
func check(_ operation: @autoclosure () -> String, _ call: () -> Int32) throws(ZMQError) -> Int32 {
    while true {
        let result = call()
        if result >= 0 { return result }
        let code = zmq_errno()
        if code == EINTR { continue }
        throw ZMQError(operation: operation(), code: code)
    }
}
