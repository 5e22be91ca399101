import CZeroMQ

/// Waits on several sockets at once.
///
/// The poller borrows its sockets: they must stay open, and be used only on the
/// thread that polls them.
public struct Poller {
    private var items: [zmq_pollitem_t] = []

    public init() {}

    /// Adds a socket to wait for input on; returns its index for `isReadable`.
    @discardableResult
    public mutating func addReadable(_ socket: Socket) -> Int {
        items.append(zmq_pollitem_t(socket: socket.handle, fd: 0, events: Int16(ZMQ_POLLIN), revents: 0))
        return items.count - 1
    }

    /// Adds a plain file descriptor to wait for input on; returns its index.
    @discardableResult
    public mutating func addReadable(descriptor: Int32) -> Int {
        items.append(zmq_pollitem_t(socket: nil, fd: descriptor, events: Int16(ZMQ_POLLIN), revents: 0))
        return items.count - 1
    }

    /// Waits until at least one socket has input or the timeout passes.
    ///
    /// - Parameter milliseconds: how long to wait; -1 waits without limit.
    /// - Returns: how many sockets are readable (0 after a timeout).
    @discardableResult
    public mutating func poll(timeout milliseconds: Int) throws(ZMQError) -> Int {
        let count = items.count
        let ready = items.withUnsafeMutableBufferPointer { buffer in
            zmq_poll(buffer.baseAddress, Int32(count), milliseconds)
        }
        if ready < 0 {
            let code = zmq_errno()
            // A signal ends the wait early; callers poll in a loop anyway.
            if code == EINTR { return 0 }
            throw ZMQError(operation: "zmq_poll", code: code)
        }
        return Int(ready)
    }

    public func isReadable(_ index: Int) -> Bool {
        items[index].revents & Int16(ZMQ_POLLIN) != 0
    }
}
