import EdgeFixtures
import Foundation
import HereaboutsKit
import Testing

/// A kit client of a stack, with its session in memory.
func kit(_ port: Int, store: MemorySessionStore = MemorySessionStore()) -> Hereabouts {
    Hereabouts(baseURL: URL(string: "http://127.0.0.1:\(port)")!, sessionStore: store)
}

/// Runs `body` on a thread of its own: the system tests beside these block
/// cooperative threads, and a kit call waiting for a turn would see its socket's
/// deadlines pass.
func onOwnThread<Value: Sendable>(_ name: String, _ body: @Sendable () async throws -> Value) async throws -> Value {
    try await withTaskExecutorPreference(ThreadExecutor(name: name)) { try await body() }
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

    var chatText: String? {
        if case .chatMessage(let message) = self { return message.text }
        return nil
    }
}
