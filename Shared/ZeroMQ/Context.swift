import CZeroMQ

/// A libzmq context: the I/O threads and the registry of `inproc://` endpoints.
///
/// A context is thread-safe; the sockets made from it are not. A process usually needs
/// one, and `inproc://` endpoints only connect sockets of the same context.
public final class Context: @unchecked Sendable {
    // The handle is only ever passed to libzmq, which synchronises access to it.
    let handle: UnsafeMutableRawPointer

    /// The process-wide context, made on first use. libzmq fails to make one only
    /// when the process is out of memory or file descriptors, where nothing can go on.
    public static let shared: Context = {
        do { return try Context() } catch { fatalError("libzmq could not create a context: \(error)") }
    }()

    public init(ioThreads: Int32 = 1) throws(ZMQError) {
        guard let handle = zmq_ctx_new() else {
            throw ZMQError(operation: "zmq_ctx_new")
        }
        self.handle = handle
        try check("zmq_ctx_set(ZMQ_IO_THREADS)") { zmq_ctx_set(handle, ZMQ_IO_THREADS, ioThreads) }
    }

    public func makeSocket(_ type: SocketType) throws(ZMQError) -> Socket {
        try Socket(context: self, type: type)
    }

    /// Makes every blocking call on this context's sockets return `ETERM`, so their
    /// threads can close them; `terminate()` then returns.
    public func shutdown() {
        _ = zmq_ctx_shutdown(handle)
    }

    /// Waits until every socket of the context is closed (each within its linger
    /// period), then frees the context. Call it once, last.
    public func terminate() {
        while zmq_ctx_term(handle) != 0 && zmq_errno() == EINTR {}
    }

    /// The libzmq version this process runs against, as `major.minor.patch`.
    public static var libraryVersion: String {
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        zmq_version(&major, &minor, &patch)
        return "\(major).\(minor).\(patch)"
    }

    /// Whether libzmq was built with a capability such as `"curve"` or `"ipc"`.
    public static func has(_ capability: String) -> Bool {
        zmq_has(capability) == 1
    }
}
