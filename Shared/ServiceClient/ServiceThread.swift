import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A named OS thread that can be joined.
///
/// Service work runs on plain threads, not Swift concurrency's cooperative pool:
/// ZeroMQ calls and SQLite writes block, and a blocked cooperative thread stalls
/// unrelated tasks.
public final class ServiceThread: Sendable {
    private let thread: pthread_t
    private let joined = Atomic<Bool>(false)

    /// Starts `body` on a new thread named `name` (Linux keeps the first 15 bytes).
    public init(name: String, _ body: @escaping @Sendable () -> Void) {
        let box = Unmanaged.passRetained(ThreadBody(name: name, body: body))
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { raw in
            let body = Unmanaged<ThreadBody>.fromOpaque(raw!).takeRetainedValue()
            // Foundation sets the OS thread name, which `top -H` and gdb show.
            Thread.current.name = String(body.name.prefix(15))
            body.body()
            return nil
        }, box.toOpaque())
        precondition(result == 0, "pthread_create failed: \(String(cString: strerror(result)))")
        self.thread = thread
    }

    /// Waits for the thread to finish. Later calls return at once (joining a thread
    /// twice is undefined behaviour in POSIX).
    public func join() {
        guard !joined.exchange(true, ordering: .acquiringAndReleasing) else { return }
        pthread_join(thread, nil)
    }
}

private final class ThreadBody: Sendable {
    let name: String
    let body: @Sendable () -> Void
    init(name: String, body: @escaping @Sendable () -> Void) {
        self.name = name
        self.body = body
    }
}
