import Dispatch
import Synchronization

/// Batches handed from one thread to another, at most `capacity` waiting: geo's
/// start-up reads and tokenises posts on one thread while another indexes them.
final class BatchPipe<Element: Sendable>: Sendable {
    private let queue = Mutex<[[Element]]>([])
    private let waiting = DispatchSemaphore(value: 0)
    private let room: DispatchSemaphore

    init(capacity: Int) {
        room = DispatchSemaphore(value: capacity)
    }

    /// Waits for room, then hands `batch` over.
    func send(_ batch: [Element]) {
        room.wait()
        queue.withLock { $0.append(batch) }
        waiting.signal()
    }

    /// No more batches: `next` returns nil once those sent are taken.
    func finish() {
        waiting.signal()
    }

    /// The next batch, waiting for it; nil after `finish`.
    func next() -> [Element]? {
        waiting.wait()
        let batch = queue.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        if batch != nil { room.signal() }
        return batch
    }
}
