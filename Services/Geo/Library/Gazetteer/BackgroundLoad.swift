import Foundation
import Synchronization

/// Work started on a thread of its own, whose result is collected later: geo reads
/// the gazetteer while it loads its index, so start-up costs the longer of the two.
final class BackgroundLoad<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)
    private let done = DispatchSemaphore(value: 0)

    init(name: String, _ work: @escaping @Sendable () throws -> Value) {
        let thread = Thread { [self] in
            let outcome = Result(catching: work)
            result.withLock { $0 = outcome }
            done.signal()
        }
        thread.name = name
        thread.start()
    }

    /// Waits for the work to finish; its value, or the error it threw.
    func value() throws -> Value {
        done.wait()
        done.signal()  // later calls do not wait
        return try result.withLock { $0! }.get()
    }
}
