import ServiceClient
import ServiceKit
import Synchronization

/// Work started on a thread of its own, whose result is collected later: geo reads
/// the gazetteer while it loads its index, so start-up costs the longer of the two.
final class BackgroundLoad<Value: Sendable>: Sendable {
    private let result = Mutex<Result<Value, any Error>?>(nil)
    private let thread = Mutex<ServiceThread?>(nil)

    init(name: String, _ work: @escaping @Sendable () throws -> Value) {
        let started = ServiceThread(name: name) { [self] in
            let outcome = Result(catching: work)
            result.withLock { $0 = outcome }
        }
        thread.withLock { $0 = started }
    }

    /// Waits for the work to finish; its value, or the error it threw.
    func value() throws -> Value {
        thread.withLock { $0 }?.join()
        return try result.withLock { $0! }.get()
    }
}
