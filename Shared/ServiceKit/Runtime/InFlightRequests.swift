import Synchronization

/// State-changing requests being handled right now, by (op, id, caller).
///
/// A retry that arrives while its original is still running (a client's timeout can
/// be shorter than a slow login) waits here, and is answered from the idempotency
/// log once the original finishes, instead of running a second time.
final class InFlightRequests: Sendable {
    private let running = Mutex<[IdempotencyKey: [Job]]>([:])

    /// Marks `key` as running and returns true; or, when it already runs, parks
    /// `job` behind it and returns false.
    func beginOrPark(_ key: IdempotencyKey, _ job: Job) -> Bool {
        running.withLock { running in
            if running[key] != nil {
                running[key]!.append(job)
                return false
            }
            running[key] = []
            return true
        }
    }

    /// Marks `key` as finished and hands back the requests parked behind it.
    func finish(_ key: IdempotencyKey) -> [Job] {
        running.withLock { $0.removeValue(forKey: key) ?? [] }
    }
}
