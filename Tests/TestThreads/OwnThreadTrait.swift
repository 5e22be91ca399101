import Foundation
import Testing

/// Runs each test of a suite on a thread of its own, a few at a time.
///
/// Swift Testing runs test functions, synchronous ones too, on Swift's cooperative
/// threads, one a core. Most of our tests block: they start processes, wait for
/// them, sleep between polls. Two such tests on a two-core machine held every
/// cooperative thread for minutes in CI, and the async work of every other test (a
/// WebSocket client's reads, a renewal) waited, so its deadlines passed. Under this
/// trait a test holds no cooperative thread, and `TestSlots` keeps as many tests
/// running at once as the cooperative threads used to allow. A `.timeLimit` on such a
/// test counts the time it waits for its slot too (Swift Testing's clock starts first):
/// in a whole run that wait is minutes.
///
///     @Suite("…", .ownThread) struct SomeTests { … }
public struct OwnThreadTrait: SuiteTrait, TestTrait, TestScoping {
    public var isRecursive: Bool { true }

    public func provideScope(for test: Test, testCase: Test.Case?,
                             performing function: @Sendable () async throws -> Void) async throws {
        // A suite's own scope holds nothing; its tests each take a slot and a thread.
        guard testCase != nil else { return try await function() }
        try await TestSlots.shared.withSlot {
            let executor = ThreadExecutor(name: test.name)
            defer { executor.finish() }
            try await withTaskExecutorPreference(executor) { try await function() }
        }
    }
}

extension Trait where Self == OwnThreadTrait {
    /// Each test on a thread of its own, a few at a time: for tests that block.
    public static var ownThread: Self { OwnThreadTrait() }
}

/// How many `.ownThread` tests run at once: `HEREABOUTS_TEST_WIDTH`, else three times
/// the cores. Blocked tests mostly wait on processes, which then use the cores: with
/// twice the cores a whole run kept 1.6 of 2 cores busy and took 283-291 s, with three
/// times 233-258 s (median 248) (BENCHMARKS.md, "The developer's loop"); with four times a start-up
/// deadline of 4 s was missed.
actor TestSlots {
    static let shared = TestSlots(
        width: ProcessInfo.processInfo.environment["HEREABOUTS_TEST_WIDTH"].flatMap(Int.init)
            ?? 3 * ProcessInfo.processInfo.activeProcessorCount)

    private let width: Int
    private var running = 0
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(width: Int) { self.width = max(1, width) }

    nonisolated func withSlot<Value: Sendable>(_ body: @Sendable () async throws -> Value) async throws -> Value {
        await take()
        do {
            let value = try await body()
            await give()
            return value
        } catch {
            await give()
            throw error
        }
    }

    private func take() async {
        if running < width {
            running += 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Hands the slot to the longest waiter, or frees it.
    private func give() {
        if waiting.isEmpty {
            running -= 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
