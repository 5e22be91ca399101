import Foundation
import TestThreads
import Testing

@Suite("Tests on threads of their own", .ownThread)
struct OwnThreadTests {
    @Test("a synchronous test runs on a thread of its own, not on a cooperative thread")
    func synchronousTest() {
        #expect(ThreadExecutor.current == "synchronousTest()")
    }

    @Test("an async test runs there too, and comes back to it after an await")
    func asyncTest() async throws {
        #expect(currentExecutor() == "asyncTest()")
        try await Task.sleep(for: .milliseconds(10))
        #expect(currentExecutor() == "asyncTest()")
    }

    private func currentExecutor() -> String? { ThreadExecutor.current }
}
