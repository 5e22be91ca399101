import Contracts
import Foundation
import Synchronization
import Wire

/// The open watches, filed by area, with their owners' counts and leases.
///
/// One lock guards them. A watch is opened under it with its first page read under
/// the index's read lock, and each applied batch is evaluated under it: so a watch
/// sees, through its first page or its events, every change exactly once. (A batch
/// applied just before an open may be evaluated just after it: its events then
/// repeat what the first page shows, which leaves the client's set as it is.)
final class WatchRegistry: Sendable {
    struct State: Sendable {
        var watches: [String: Watch] = [:]
        /// Watches over posts, and over people, by area: a changed post or home looks
        /// only among its own kind.
        var grid = AreaGrid<String>()
        var userGrid = AreaGrid<String>()
        var perOwner: [String: Int] = [:]
        /// The watch each owner's open request made, so a retried open does not make a second.
        var opened: [OpenKey: String] = [:]
        var openKeys: [String: OpenKey] = [:]
        /// The instant the clock last judged `openNow` watches at.
        var clock = Date()
    }

    struct OpenKey: Hashable, Sendable {
        var owner: String
        var requestID: String
    }

    private let state = Mutex(State())
    let maxWatches: Int
    /// Sends an event's JSON to the owner's topic.
    private let publish: @Sendable (_ owner: String, _ json: [UInt8]) -> Void

    /// `clock`: the instant `openNow` watches are taken to have been judged at last.
    init(maxWatches: Int = GeoRules.maxWatches, clock: Date = Date(),
         publish: @escaping @Sendable (_ owner: String, _ json: [UInt8]) -> Void) {
        self.maxWatches = maxWatches
        self.publish = publish
        state.withLock { $0.clock = clock }
    }

    var count: Int { state.withLock { $0.watches.count } }

    /// Opens a watch (or finds the one a retry of the same request opened) and
    /// returns it with `firstPage(watch)`, read while no batch can be evaluated; that
    /// may keep in the watch what its owner was given.
    func open<Page>(owner: String, requestID: String, lease: Int, make: (_ id: String, _ expiresAt: Date) throws -> Watch,
                    firstPage: (inout Watch) throws -> Page) throws -> (Watch, Page) {
        try state.withLock { state in
            let key = OpenKey(owner: owner, requestID: requestID)
            if let id = state.opened[key], var watch = state.watches[id] {
                let page = try firstPage(&watch)
                state.watches[id] = watch
                return (watch, page)
            }
            guard state.perOwner[owner, default: 0] < GeoRules.watchesPerUser else {
                throw ServiceError(code: .rateLimited,
                                   message: "a user may hold \(GeoRules.watchesPerUser) watches at once: close one first")
            }
            guard state.watches.count < maxWatches else {
                throw ServiceError(code: .unavailable, message: "geo holds its maximum of \(maxWatches) watches; try again later")
            }
            var watch = try make(Self.newID(), Date().addingTimeInterval(TimeInterval(lease)))
            let page = try firstPage(&watch)
            state.watches[watch.id] = watch
            switch watch.subject {
            case .posts: state.grid.insert(watch.id, bounds: watch.bounds)
            case .users: state.userGrid.insert(watch.id, bounds: watch.bounds)
            }
            state.perOwner[owner, default: 0] += 1
            state.opened[key] = watch.id
            state.openKeys[watch.id] = key
            return (watch, page)
        }
    }

    /// Extends a watch's lease to `lease` seconds from now.
    func renew(_ id: String, owner: String, lease: Int) throws -> WatchInfo {
        try state.withLock { state in
            guard var watch = state.watches[id], watch.owner == owner else { throw Self.unknown(id) }
            watch.expiresAt = Date().addingTimeInterval(TimeInterval(lease))
            state.watches[id] = watch
            return watch.info
        }
    }

    func close(_ id: String, owner: String) throws {
        try state.withLock { state in
            guard let watch = state.watches[id], watch.owner == owner else { throw Self.unknown(id) }
            Self.remove(watch, from: &state)
        }
    }

    /// Ends the watches whose lease has run out, telling each owner.
    func expire(at now: Date = Date()) {
        state.withLock { state in
            for watch in state.watches.values where watch.expiresAt <= now {
                Self.remove(watch, from: &state)
                var writer = JSONWriter(capacity: 96)
                WatchEventWriter.begin(.expired, watchId: watch.id, seq: watch.seq + 1, into: &writer)
                writer.appendASCII("}")
                publish(watch.owner, writer.bytes)
            }
        }
    }

    /// Moves the clock of `openNow` watches to `now` once a minute has begun since it
    /// last moved: `body` gives the events of the posts that opened or closed between.
    func tick(now: Date = Date(), _ body: (_ from: Date, _ to: Date, inout State) -> [(owner: String, json: [UInt8])]) {
        state.withLock { state in
            let from = state.clock
            guard (now.timeIntervalSince1970 / 60).rounded(.down) > (from.timeIntervalSince1970 / 60).rounded(.down) else { return }
            state.clock = now
            for event in body(from, now, &state) { publish(event.owner, event.json) }
        }
    }

    /// Runs `body` with the watches locked; it returns events to publish, in order.
    func evaluate(_ body: (inout State) -> [(owner: String, json: [UInt8])]) {
        state.withLock { state in
            guard !state.watches.isEmpty else { return }
            for event in body(&state) { publish(event.owner, event.json) }
        }
    }

    private static func remove(_ watch: Watch, from state: inout State) {
        state.watches[watch.id] = nil
        state.grid.remove(watch.id)
        state.userGrid.remove(watch.id)
        state.perOwner[watch.owner, default: 1] -= 1
        if state.perOwner[watch.owner] == 0 { state.perOwner[watch.owner] = nil }
        if let key = state.openKeys.removeValue(forKey: watch.id) { state.opened[key] = nil }
    }

    private static func unknown(_ id: String) -> ServiceError {
        ServiceError(code: .notFound, message: "no watch \(id) of yours: it expired, was closed, or geo restarted; open it again",
                     field: "id")
    }

    private static func newID() -> String {
        "w" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(20)
    }
}

/// The JSON of watch events: `{"type":…,"watchId":…,"seq":…` and what follows.
enum WatchEventWriter {
    static func begin(_ type: WatchEvent.Kind, watchId: String, seq: Int, into writer: inout JSONWriter) {
        writer.appendASCII("{\"type\":")
        writer.write(type.rawValue)
        writer.appendASCII(",\"watchId\":")
        writer.write(watchId)
        writer.appendASCII(",\"seq\":")
        writer.write(Int64(seq))
    }
}
