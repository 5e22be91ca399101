import Wire
#if canImport(Glibc)
import Glibc
#endif

/// A pipe a thread waits on beside its sockets, so that another thread can wake it:
/// `signal` writes a byte, `drain` takes back what was written.
///
/// Both ends are close-on-exec, so a process this one starts does not inherit them;
/// both are non-blocking, so a drain with nothing left (another waiter took it) and a
/// signal into a full pipe (wake-ups are pending anyway) return at once.
public final class WakePipe: Sendable {
    /// The end to wait on (`Poller.addReadable(descriptor:)`).
    public let readEnd: Int32
    private let writeEnd: Int32

    public init() throws(ServiceError) {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw ServiceError(code: .internal, message: "could not make a pipe: errno \(errno)") }
        for end in ends {
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
    }

    deinit {
        close(readEnd)
        close(writeEnd)
    }

    public func signal() {
        var one: UInt8 = 1
        _ = write(writeEnd, &one, 1)
    }

    public func drain() {
        var bytes = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        _ = withUnsafeMutableBytes(of: &bytes) { read(readEnd, $0.baseAddress, $0.count) }
    }
}
