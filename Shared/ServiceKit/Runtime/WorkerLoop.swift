import Foundation
import ServiceClient
import Synchronization

/// A thread of its own that runs `pass` again and again, off the request path: after
/// each pass it sleeps until the time the pass returned, a `wake()`, or `stop()`.
/// The housekeeper and auth's mail sender run on one.
public final class WorkerLoop: Sendable {
    private let name: String
    private let pass: @Sendable () -> Date
    private let condition = NSCondition()
    private let state = Mutex<(stopped: Bool, woken: Bool)>((false, false))
    private let thread = Mutex<ServiceThread?>(nil)

    public init(name: String, pass: @escaping @Sendable () -> Date) {
        self.name = name
        self.pass = pass
    }

    public func start() {
        thread.withLock { thread in
            guard thread == nil else { return }
            state.withLock { $0.stopped = false }
            thread = ServiceThread(name: name) { [self] in run() }
        }
    }

    /// Returns once a pass under way has finished.
    public func stop() {
        condition.lock()
        state.withLock { $0.stopped = true }
        condition.broadcast()
        condition.unlock()
        thread.withLock { thread in
            defer { thread = nil }
            return thread
        }?.join()
    }

    /// Starts the next pass now (or as soon as the one under way ends).
    public func wake() {
        condition.lock()
        state.withLock { $0.woken = true }
        condition.broadcast()
        condition.unlock()
    }

    /// Whether `stop()` was called: a long pass checks it between its steps.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    private func run() {
        while !isStopped {
            state.withLock { $0.woken = false }
            let next = pass()
            condition.lock()
            while !state.withLock({ $0.stopped || $0.woken }) && Date() < next {
                _ = condition.wait(until: next)
            }
            condition.unlock()
        }
    }
}
