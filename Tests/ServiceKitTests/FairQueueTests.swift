import Foundation
import ServiceKit
import Testing

@Suite("A queue fair across origins")
struct FairQueueTests {
    @Test("lanes are served in turn: one key's hundred items do not hold another's one behind them")
    func turns() {
        let queue = FairQueue<String>(capacity: 1_000, laneCapacity: 200)
        for index in 0..<100 { #expect(queue.offer("flood \(index)", key: "198.51.100.7")) }
        #expect(queue.offer("login", key: "203.0.113.9"))
        #expect(queue.take() == "flood 0")
        #expect(queue.take() == "login")
        #expect(queue.take() == "flood 1")
        #expect(queue.take() == "flood 2")
        // A key that comes back joins the round: the flood just had its turn.
        #expect(queue.offer("second login", key: "203.0.113.9"))
        #expect(queue.take() == "second login")
        #expect(queue.take() == "flood 3")
        #expect(queue.count == 96)
    }

    @Test("one key fills its lane, not the queue: others are still taken in")
    func laneCapacity() {
        let queue = FairQueue<Int>(capacity: 64)
        #expect(queue.laneCapacity == 16)
        let taken = (0..<64).filter { queue.offer($0, key: "flood") }
        #expect(taken.count == 16)
        #expect(queue.offer(1, key: "someone else"))
        let full = FairQueue<Int>(capacity: 2, laneCapacity: 2)
        #expect(full.offer(1, key: "a") && full.offer(2, key: "b"))
        #expect(!full.offer(3, key: "c"), "the queue's own capacity holds")
    }

    @Test("a closed queue hands out what waits, then nil; it takes nothing more")
    func close() {
        let queue = FairQueue<Int>(capacity: 8)
        #expect(queue.offer(1, key: "a"))
        queue.close()
        #expect(!queue.offer(2, key: "a"))
        #expect(queue.take() == 1)
        #expect(queue.take() == nil)
    }
}
