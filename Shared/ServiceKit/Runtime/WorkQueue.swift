import Foundation
import Synchronization

/// A bounded first-in first-out queue that worker threads block on.
///
/// Idle workers take the next item, so a slow request never holds up one queued
/// behind it while another worker is free (which round-robin dispatch would do).
public final class WorkQueue<Item: Sendable>: Sendable {
    private struct State {
        var items: [Item] = []
        var head = 0
        var isClosed = false
        var count: Int { items.count - head }
    }

    // NSCondition provides the wait/signal that Synchronization.Mutex lacks; the
    // state is only touched while it is locked.
    private let condition = NSCondition()
    private nonisolated(unsafe) var state = State()
    public let capacity: Int

    public init(capacity: Int = .max) {
        self.capacity = capacity
    }

    /// Adds an item; false when the queue is full or closed.
    @discardableResult
    public func offer(_ item: Item) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !state.isClosed, state.count < capacity else { return false }
        state.items.append(item)
        condition.signal()
        return true
    }

    /// The next item, waiting for one; nil once the queue is closed and empty.
    public func take() -> Item? {
        condition.lock()
        defer { condition.unlock() }
        while state.count == 0 && !state.isClosed {
            condition.wait()
        }
        guard state.count > 0 else { return nil }
        let item = state.items[state.head]
        state.head += 1
        // Compact now and then instead of shifting on every take.
        if state.head > 64 && state.head * 2 > state.items.count {
            state.items.removeFirst(state.head)
            state.head = 0
        }
        return item
    }

    /// Items still waiting.
    public var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.count
    }

    /// Refuses new items; workers finish what is queued, then `take` returns nil.
    public func close() {
        condition.lock()
        state.isClosed = true
        condition.broadcast()
        condition.unlock()
    }
}
