import Foundation
import ServiceKit
import Synchronization
import Testing

@Suite("WorkerLoop")
struct WorkerLoopTests {
    @Test("with a spacing, a stream of wakes is served in batches: passes begin at most once per spacing, and the last wake is served")
    func spacedPasses() throws {
        let passes = Mutex<[Date]>([])
        let served = Mutex(0), queued = Mutex(0)
        let spacing: TimeInterval = 0.05
        let loop = WorkerLoop(name: "spaced", spacing: spacing) {
            passes.withLock { $0.append(Date()) }
            let waiting = queued.withLock { count in defer { count = 0 }; return count }
            served.withLock { $0 += waiting }
            return Date().addingTimeInterval(60)
        }
        loop.start()
        defer { loop.stop() }
        // 400 wakes over about 0.4 s: without a spacing each could start a pass of its own.
        let started = Date()
        for _ in 0..<400 {
            queued.withLock { $0 += 1 }
            loop.wake()
            Thread.sleep(forTimeInterval: 0.001)
        }
        let elapsed = Date().timeIntervalSince(started)
        let deadline = Date().addingTimeInterval(5)
        while served.withLock({ $0 }) < 400 && Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        #expect(served.withLock { $0 } == 400)
        let times = passes.withLock { $0 }
        // One pass at the start, then at most one per spacing (a loaded machine makes fewer, never more).
        #expect(times.count <= Int(elapsed / spacing) + 3, "\(times.count) passes in \(elapsed) s")
        for (earlier, later) in zip(times, times.dropFirst()) {
            #expect(later.timeIntervalSince(earlier) >= spacing * 0.99)
        }
    }
}
