import Foundation

/// A bounded queue that threads block on, fair across the keys items are offered
/// under: each key's items wait in order in a lane of their own, and `take` serves
/// the lanes in turn. A pool's slow work (password hashing) waits in one, keyed by
/// the request's origin, so one address sending many requests is served once per
/// round like every other, and cannot hold another's login behind all of its own.
///
/// Each lane holds at most `laneCapacity` items, so one key cannot fill the queue
/// and have everyone else refused; all lanes together hold at most `capacity`.
///
/// Offered under one key, it is a plain first-in first-out queue: the workers' queue,
/// where an idle worker takes the next request, so a slow request never holds up one
/// queued behind it while another worker is free (which round-robin dispatch would).
public final class FairQueue<Item: Sendable>: Sendable {
    private struct Lane {
        var items: [Item] = []
        var head = 0
        var count: Int { items.count - head }

        mutating func pop() -> Item {
            let item = items[head]
            head += 1
            // Compact now and then instead of shifting on every take.
            if head > 64 && head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
            return item
        }
    }

    private struct State {
        var lanes: [String: Lane] = [:]
        /// The keys with items waiting, in the order they are served.
        var turns: [String] = []
        var next = 0
        var count = 0
        var isClosed = false
    }

    // NSCondition provides the wait/signal that Synchronization.Mutex lacks; the
    // state is only touched while it is locked.
    private let condition = NSCondition()
    private nonisolated(unsafe) var state = State()
    public let capacity: Int
    public let laneCapacity: Int

    /// - Parameter laneCapacity: the most one key may have waiting; a quarter of
    ///   `capacity` (at least one) unless given.
    public init(capacity: Int = .max, laneCapacity: Int? = nil) {
        self.capacity = capacity
        self.laneCapacity = laneCapacity ?? max(1, capacity / 4)
    }

    /// Adds an item to `key`'s lane; false when that lane or the queue is full, or
    /// the queue is closed.
    @discardableResult
    public func offer(_ item: Item, key: String = "") -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !state.isClosed, state.count < capacity else { return false }
        var lane = state.lanes.removeValue(forKey: key) ?? Lane()
        guard lane.count < laneCapacity else {
            state.lanes[key] = lane
            return false
        }
        if lane.count == 0 { state.turns.append(key) }
        lane.items.append(item)
        state.lanes[key] = lane
        state.count += 1
        condition.signal()
        return true
    }

    /// The next item, from the next lane in turn, waiting for one; nil once the
    /// queue is closed and empty.
    public func take() -> Item? {
        condition.lock()
        defer { condition.unlock() }
        while state.count == 0 && !state.isClosed {
            condition.wait()
        }
        guard state.count > 0 else { return nil }
        if state.next >= state.turns.count { state.next = 0 }
        let key = state.turns[state.next]
        var lane = state.lanes.removeValue(forKey: key) ?? Lane()
        let item = lane.pop()
        state.count -= 1
        if lane.count == 0 {
            // An empty lane leaves the round; the next key has moved into its place.
            state.turns.remove(at: state.next)
        } else {
            state.lanes[key] = lane
            state.next += 1
        }
        return item
    }

    /// Items still waiting.
    public var count: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.count
    }

    /// Refuses new items; threads finish what is queued, then `take` returns nil.
    public func close() {
        condition.lock()
        state.isClosed = true
        condition.broadcast()
        condition.unlock()
    }
}
