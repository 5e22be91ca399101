import Foundation
import Synchronization

/// A thread of its own (a `WorkerLoop`) that runs work handed to it while the caller waits.
///
/// A thread at a low priority (nice 19, which an unprivileged thread cannot raise again)
/// hands over what must not wait behind busier threads: what holds a lock the request
/// threads also take (SQLite's one writer: preempted while holding it, under a load that
/// keeps the cores busy, it would hold up every send), and what may start a thread shared
/// with the rest of the process (a new thread takes its creator's priority), and work
/// that fell behind at the low priority. The lane's thread is made by `start()`'s caller,
/// so it has that thread's priority.
public final class NormalPriorityLane: Sendable {
    private final class Jobs: Sendable {
        let state = Mutex<(waiting: [@Sendable () -> Void], open: Bool)>(([], false))
        /// The lane's thread, once started: work handed over from it runs at once.
        let thread = Mutex<pthread_t?>(nil)

        func take() -> [@Sendable () -> Void] {
            state.withLock { state in
                defer { state.waiting.removeAll() }
                return state.waiting
            }
        }
    }

    private let jobs: Jobs
    private let loop: WorkerLoop

    public init(name: String) {
        let jobs = Jobs()
        self.jobs = jobs
        loop = WorkerLoop(name: name, prepare: { jobs.thread.withLock { $0 = pthread_self() } }) {
            for job in jobs.take() { job() }
            // Until woken (an hour is as good as never; `distantFuture` traps in NSCondition's wait).
            return Date().addingTimeInterval(3_600)
        }
    }

    public func start() {
        jobs.state.withLock { $0.open = true }
        loop.start()
    }

    /// Returns once the work handed over before it has run (what the thread had not
    /// taken runs on the caller's); work handed over after it runs on its caller's thread.
    public func stop() {
        jobs.state.withLock { $0.open = false }
        loop.stop()
        for job in jobs.take() { job() }
    }

    /// `work`'s result, computed on the lane's thread (on the caller's when the lane is not
    /// running, and at once when the caller is the lane's thread, which would wait for itself).
    public func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) throws -> T {
        if let own = jobs.thread.withLock({ $0 }), pthread_equal(own, pthread_self()) != 0 { return try work() }
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<T, any Error>?>(nil)
        let job: @Sendable () -> Void = {
            let result = Result { try work() }
            outcome.withLock { $0 = result }
            done.signal()
        }
        let accepted = jobs.state.withLock { state in
            guard state.open else { return false }
            state.waiting.append(job)
            return true
        }
        if accepted {
            loop.wake()
            done.wait()
        } else {
            job()
        }
        guard let result = outcome.withLock({ $0 }) else { throw NoResult() }
        return try result.get()
    }

    struct NoResult: Error, CustomStringConvertible {
        var description: String { "the lane ended without a result" }
    }
}
