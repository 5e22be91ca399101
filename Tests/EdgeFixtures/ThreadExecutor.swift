import Foundation
import Synchronization

/// A task executor with a thread of its own, for the async code of a system test
/// (a WebSocket client library's, say) that must not wait for Swift's cooperative
/// threads: those are few (one a core), and the blocking system tests running beside
/// it can hold them all for many seconds, long enough for the edge to close a socket
/// whose token did not come within 10 s. Run the code under
/// `withTaskExecutorPreference(ThreadExecutor(), operation:)`.
public final class ThreadExecutor: TaskExecutor, Sendable {
    private let jobs = Mutex<[UnownedJob]>([])
    private let ready = DispatchSemaphore(value: 0)

    public init(name: String = "test-executor") {
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        jobs.withLock { $0.append(job) }
        ready.signal()
    }

    /// Runs jobs as they come, for the life of the process (a test's executor is small).
    private func run() {
        while true {
            ready.wait()
            guard let job = jobs.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) else { continue }
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
