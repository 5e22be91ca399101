import Foundation
import ServiceClient
import Synchronization

/// A thread of its own that runs `pass` again and again, off the request path: after
/// each pass it sleeps until the time the pass returned, a `wake()`, or `stop()`.
/// The housekeeper, auth's mail sender and chat's push sender run on one.
///
/// With a `spacing`, passes begin at most that often: the first wake after a quiet
/// spell starts a pass at once, while work that streams in (a push per message at
/// thousands a second) is taken in batches, each pass's fixed cost (its reads, its
/// write, the thread's wake-ups) shared by what arrived in the meantime.
public final class WorkerLoop: Sendable {
    private let name: String
    private let spacing: TimeInterval
    private let pass: @Sendable () -> Date
    private let prepare: @Sendable () -> Void
    private let condition = NSCondition()
    private let state = Mutex<(stopped: Bool, woken: Bool)>((false, false))
    private let thread = Mutex<ServiceThread?>(nil)

    /// - Parameter prepare: runs first on the loop's thread (to set its priority, say).
    public init(name: String, spacing: TimeInterval = 0, prepare: @escaping @Sendable () -> Void = {},
                pass: @escaping @Sendable () -> Date) {
        self.name = name
        self.spacing = spacing
        self.prepare = prepare
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
        // Woken already: the loop sees it before it sleeps, so there is no one to signal
        // (a commit per message would otherwise signal the thread each time).
        let already = state.withLock { state in
            defer { state.woken = true }
            return state.woken
        }
        guard !already else { return }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Whether `stop()` was called: a long pass checks it between its steps.
    public var isStopped: Bool { state.withLock { $0.stopped } }

    private func run() {
        prepare()
        while !isStopped {
            state.withLock { $0.woken = false }
            let began = Date()
            let next = pass()
            condition.lock()
            while !state.withLock({ $0.stopped || $0.woken }) && Date() < next {
                _ = condition.wait(until: next)
            }
            let earliest = began.addingTimeInterval(spacing)
            while !state.withLock({ $0.stopped }) && Date() < earliest {
                _ = condition.wait(until: earliest)
            }
            condition.unlock()
        }
    }
}
