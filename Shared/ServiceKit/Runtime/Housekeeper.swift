import Foundation
import Logging
import ServiceClient
import Synchronization

/// Runs periodic upkeep (forgetting old idempotency entries, expired sessions) on a
/// thread of its own, off the request path.
public final class Housekeeper: Sendable {
    public struct Task: Sendable {
        public var name: String
        public var interval: TimeInterval
        public var work: @Sendable () throws -> Void

        public init(name: String, every interval: TimeInterval, _ work: @escaping @Sendable () throws -> Void) {
            self.name = name
            self.interval = interval
            self.work = work
        }
    }

    private let tasks: [Task]
    private let logger: Logger
    private let due: Mutex<[Date]>
    private let loop: Mutex<WorkerLoop?> = Mutex(nil)

    public init(tasks: [Task], logger: Logger) {
        self.tasks = tasks
        self.logger = logger
        due = Mutex(tasks.map { _ in .distantFuture })
    }

    /// Starts the thread; each task first runs one interval after the start.
    public func start() {
        guard !tasks.isEmpty else { return }
        due.withLock { due in due = tasks.map { Date().addingTimeInterval($0.interval) } }
        let worker = WorkerLoop(name: "housekeeping") { [self] in runDue() }
        loop.withLock { $0 = worker }
        worker.start()
    }

    public func stop() {
        loop.withLock { $0 }?.stop()
    }

    /// Runs the tasks that are due; returns when the next one is.
    private func runDue() -> Date {
        var due = self.due.withLock { $0 }
        for (index, task) in tasks.enumerated() where due[index] <= Date() {
            do {
                try task.work()
            } catch {
                logger.error("housekeeping task \(task.name) failed", metadata: ["error": "\(error)"])
            }
            due[index] = Date().addingTimeInterval(task.interval)
        }
        self.due.withLock { [due] in $0 = due }
        return due.min() ?? .distantFuture
    }
}

extension Housekeeper.Task {
    /// Checkpoints the database's WAL off the request path (every service writes).
    /// Four times a second: each checkpoint then has at most a quarter second's
    /// WAL to sync and copy, and the WAL starts over long before it grows large.
    public static func checkpoint(_ database: ServiceDatabase, every interval: TimeInterval = 0.25) -> Housekeeper.Task {
        Housekeeper.Task(name: "checkpoint", every: interval) {
            try database.checkpoint()
        }
    }

    /// Forgets kept replies past their retention (every service keeps them).
    public static func forgetKeptReplies(in database: ServiceDatabase, every interval: TimeInterval = 600) -> Housekeeper.Task {
        Housekeeper.Task(name: "forget-kept-replies", every: interval) {
            _ = try database.pool.write { db in
                try IdempotencyLog.purge(before: Date().addingTimeInterval(-IdempotencyLog.retention), in: db)
            }
        }
    }
}
