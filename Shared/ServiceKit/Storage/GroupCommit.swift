import Foundation
import GRDB

/// Joins the write transactions of concurrent requests into one SQLite transaction.
///
/// A small transaction costs mostly its commit: every page it dirtied (a table's
/// last leaf, each index's) is appended to the WAL again. Requests that arrive
/// while a commit is under way wait and go together in the next one. The thread
/// that finds no commit under way leads: it runs every waiting request's work, each
/// in a savepoint of its own (so one request's failure rolls back only that
/// request), commits once, and wakes the others with their results. There is no
/// extra thread: each request waits on its own thread, as it would for the lock.
///
/// Under steady concurrent load a leader waits, briefly, until as many writes are
/// waiting as were lately under way at once, so they share its transaction rather
/// than straggling into the next: with a handful of clients in a closed loop that
/// is what makes batches form at all. A lone writer never waits.
final class GroupCommit: @unchecked Sendable {
    // `pending`, `leading`, `underway` and each unit's outcome are only touched with
    // the condition's lock held; a unit's work runs on the leader's thread while its
    // own thread waits, so it is never touched from two threads at once.
    private let condition = NSCondition()
    private var pending: [Unit] = []
    private var leading = false
    /// State-changing requests being handled that have not committed yet.
    private var underway = 0
    /// The most writes under way at once lately (over `window`).
    private var peak = 0
    private var peakSince = Date()
    private let writer: any DatabaseWriter
    /// The longest a leader waits for others to join.
    static let maxDelay: TimeInterval = 0.001
    /// How far back `peak` looks.
    static let window: TimeInterval = 0.05

    init(writer: any DatabaseWriter) {
        self.writer = writer
    }

    /// A state-changing request has begun; it will commit (or fail) soon.
    func begin() {
        condition.lock()
        underway += 1
        let now = Date()
        if now.timeIntervalSince(peakSince) > Self.window {
            peak = underway
            peakSince = now
        } else {
            peak = max(peak, underway)
        }
        condition.unlock()
    }

    /// A state-changing request is done, committed or not.
    func end() {
        condition.lock()
        underway -= 1
        condition.broadcast()
        condition.unlock()
    }

    func write<T>(_ work: (Database) throws -> T) throws -> T {
        try withoutActuallyEscaping(work) { work in
            var value: T?
            let unit = Unit { db in value = try work(db) }
            condition.lock()
            pending.append(unit)
            condition.broadcast()
            while unit.outcome == nil {
                if leading {
                    condition.wait()
                    continue
                }
                leading = true
                let deadline = Date().addingTimeInterval(Self.maxDelay)
                while pending.count < peak && Date() < deadline {
                    _ = condition.wait(until: deadline)
                }
                let batch = pending
                pending.removeAll(keepingCapacity: true)
                condition.unlock()
                let outcomes = run(batch)
                condition.lock()
                for (unit, outcome) in zip(batch, outcomes) { unit.outcome = outcome }
                leading = false
                condition.broadcast()
            }
            let outcome = unit.outcome!
            condition.unlock()
            if case .failure(let error) = outcome { throw error }
            return value!
        }
    }

    /// Runs a batch in one transaction; a unit that throws is rolled back alone.
    private func run(_ batch: [Unit]) -> [Result<Void, any Error>] {
        // Most batches fail nowhere: run them with no savepoints, which cost a
        // statement journal per unit. Should any unit throw, nothing of the batch
        // is kept (the transaction rolls back) and it runs again below, each unit in
        // a savepoint of its own. A unit's work may run twice: it keeps its effects
        // in the transaction (and hooks such as `afterNextTransaction`, which run
        // only on commit), so the first run leaves no trace.
        do {
            try writer.write { db in
                for unit in batch { try unit.work(db) }
            }
            return batch.map { _ in .success(()) }
        } catch {
            // Alone, a unit's failure is the transaction's. Otherwise one unit
            // failed, or the commit did: go again, unit by unit.
            if batch.count == 1 { return [.failure(error)] }
        }
        var outcomes = [Result<Void, any Error>](repeating: .success(()), count: batch.count)
        do {
            try writer.write { db in
                for (index, unit) in batch.enumerated() {
                    do {
                        try db.inSavepoint {
                            try unit.work(db)
                            return .commit
                        }
                    } catch {
                        outcomes[index] = .failure(error)
                    }
                }
            }
        } catch {
            // The commit itself failed: nothing of the batch is kept.
            return batch.map { _ in .failure(error) }
        }
        return outcomes
    }

    private final class Unit {
        let work: (Database) throws -> Void
        var outcome: Result<Void, any Error>?
        init(_ work: @escaping (Database) throws -> Void) { self.work = work }
    }
}
