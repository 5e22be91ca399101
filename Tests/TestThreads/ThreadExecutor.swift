import Foundation
import Synchronization

/// A task executor with a thread of its own, for a test whose code must not wait for
/// Swift's cooperative threads, or hold one: those are few (one a core; two on CI's
/// machine), so two tests blocking in them stop every other test's async work.
///
/// `finish()` lets the thread end once its queue is empty; a job that comes after
/// (an unstructured task's, say) goes to the global executor instead of waiting for
/// a thread that is gone.
public final class ThreadExecutor: TaskExecutor, Sendable {
    private struct Queue {
        var jobs: [UnownedJob] = []
        var finished = false
    }

    private let queue = Mutex(Queue())
    private let ready = DispatchSemaphore(value: 0)
    public let name: String

    public init(name: String = "test-executor") {
        self.name = name
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// The name of the executor whose thread this is; nil on any other thread.
    public static var current: String? {
        Thread.current.threadDictionary[threadKey] as? String
    }

    private static let threadKey = "ThreadExecutor"

    public func enqueue(_ job: consuming ExecutorJob) {
        let unowned = UnownedJob(job)
        let queued = queue.withLock { queue in
            guard !queue.finished else { return false }
            queue.jobs.append(unowned)
            return true
        }
        if queued {
            ready.signal()
        } else {
            globalConcurrentExecutor.enqueue(ExecutorJob(unowned))
        }
    }

    /// Ends the thread after the jobs already queued.
    public func finish() {
        queue.withLock { $0.finished = true }
        ready.signal()
    }

    private func run() {
        Thread.current.threadDictionary[Self.threadKey] = name
        while true {
            ready.wait()
            let next: UnownedJob?? = queue.withLock { queue in
                if !queue.jobs.isEmpty { return queue.jobs.removeFirst() }
                return queue.finished ? .some(nil) : nil
            }
            switch next {
            case .some(.some(let job)): job.runSynchronously(on: asUnownedTaskExecutor())
            case .some(.none): return
            case .none: continue
            }
        }
    }
}
