import EdgeFixtures
import Foundation
import HereaboutsKit
import Synchronization
import Testing

/// A kit client of a stack, with its session in memory, asking names in `languages`
/// (English by default, rather than whatever this machine's locale says).
func kit(_ port: Int, store: MemorySessionStore = MemorySessionStore(), languages: [String] = ["en"]) -> Hereabouts {
    Hereabouts(baseURL: URL(string: "http://127.0.0.1:\(port)")!, sessionStore: store, languages: languages)
}

/// The first event that `matches` within `seconds`, or nil.
func firstEvent(_ iterator: inout AsyncThrowingStream<LiveEvent, any Error>.AsyncIterator, within seconds: Double,
                where matches: (LiveEvent) -> Bool) async throws -> LiveEvent? {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        guard let event = try await iterator.next() else { return nil }
        if matches(event) { return event }
    }
    return nil
}

extension LiveEvent {
    var isConnected: Bool {
        if case .connected = self { return true }
        return false
    }

    /// The post whose fence this event says was entered.
    var enteredFence: String? {
        if case .fenceEntered(let postId, _) = self { return postId }
        return nil
    }

    var chatText: String? {
        if case .chatMessage(let message) = self { return message.text }
        return nil
    }
}

/// `body`'s first non-nil value within 30 s: for what the server does after it
/// answers (the geo index follows the catalogue's changes).
func eventually<Value>(_ what: String, _ body: () async throws -> Value?) async throws -> Value {
    let deadline = Date().addingTimeInterval(30)
    var last: (any Error)?
    while Date() < deadline {
        do {
            if let value = try await body() { return value }
        } catch {
            last = error
        }
        try await Task.sleep(for: .milliseconds(50))
    }
    throw Timeout(description: "\(what): nothing after 30 s\(last.map { " (\($0))" } ?? "")")
}

struct Timeout: Error, CustomStringConvertible {
    var description: String
}

/// A service's pid from `here up`'s line `<service>  …  ready  pid N`.
func servicePID(_ service: String, in log: String) -> pid_t? {
    log.split(separator: "\n").first { $0.hasPrefix("\(service) ") }
        .flatMap { $0.split(separator: " ").last }.flatMap { pid_t($0) }
}

/// A live query's updates, read in the background as they come: a step that waits
/// too long fails saying what did come and what the stack logged, instead of
/// hanging in `next()` until the test's time limit.
final class UpdateRecorder<Update: Sendable> {
    private final class Received: Sendable {
        struct State {
            var updates: [Update] = []
            var end: String?
        }

        let state = Mutex(State())
    }

    private let received = Received()
    private var taken = 0
    private let reader: Task<Void, Never>
    private let logs: StackLogs

    init<Query: AsyncSequence & Sendable>(_ query: Query, logs: StackLogs) where Query.Element == Update {
        let received = self.received
        self.logs = logs
        reader = Task {
            do {
                for try await update in query { received.state.withLock { $0.updates.append(update) } }
                received.state.withLock { $0.end = "ended" }
            } catch {
                received.state.withLock { $0.end = "ended with \(error)" }
            }
        }
    }

    deinit { reader.cancel() }

    /// The next update, waiting up to `seconds` for it.
    func next(_ what: String, within seconds: Double = 60) async throws -> Update {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let (next, end) = received.state.withLock { state in
                (taken < state.updates.count ? state.updates[taken] : nil, state.end)
            }
            if let next {
                taken += 1
                return next
            }
            if let end { throw Timeout(description: "\(what): the query \(end)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        let seen = received.state.withLock { $0.updates.map { "\($0)" } }
        throw Timeout(description: "\(what): nothing within \(Int(seconds)) s; updates so far: \(seen)\n\(logs.tails(["edge", "geo"]))")
    }
}
