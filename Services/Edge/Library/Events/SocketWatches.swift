import Contracts
import Foundation
import ServiceClient
import Synchronization
import Wire

/// The live queries of the edge's sockets (EDGE.md, live queries): a socket's
/// `{"type":"watch","id":…,"search"|"within"|"usersNear":…}` opens a watch at geo with the
/// socket's token, geo's events for it go to that socket alone, renewed while the
/// socket lives and closed with it.
///
/// A watch geo no longer has (geo restarted; a lease ran out while geo was
/// unreachable) or whose events came with a gap in `seq` is opened again, and the
/// socket gets a fresh `watch.opened` with `"reset":true`: the app replaces what it
/// holds with that page. A lost last event leaves no gap behind it: each renewal
/// tells how many events geo has published, and a watch still short of that a few
/// seconds later is opened again too.
///
/// With geo run as replicas, a watch lives in the memory of the replica that opened
/// it: its renewals and close go there, its events come from there (the hub hears
/// every replica), and a watch whose replica stops answering is opened again on
/// another.
final class SocketWatches: Sendable {
    /// One watch of one socket.
    struct Entry: Sendable {
        let socketID: Int
        let key: String
        let outbox: EventHub.Outbox
        /// The body of `geo.watch.open`, to open it again.
        let body: JSONObject
        var watchId: String
        var seq = 0
        var renewedAt = Date()
        /// Set when a renewal said geo had published more events than arrived.
        var shortfall: Shortfall?
    }

    /// Events geo said it had published (`seq`) that had not arrived when it said so.
    struct Shortfall: Sendable {
        let seq: Int
        let since: Date
    }

    /// How long events geo has published may take to arrive before they count as lost.
    static let arrivalGrace: TimeInterval = 2

    private struct State: Sendable {
        /// By geo's watch id.
        var entries: [String: Entry] = [:]
        /// Socket → its key → geo's watch id.
        var keys: [Int: [String: String]] = [:]
        /// Socket → the keys it asked to open that geo has not answered yet: counted
        /// against `perSocket` with the open ones, so a burst cannot open more.
        var opening: [Int: Set<String>] = [:]
        /// Each socket's latest token: watches are opened and renewed with it.
        var tokens: [Int: String] = [:]
        /// Events for watch ids not known yet: geo may publish an event before its
        /// reply to the open arrives here. Kept a few seconds.
        var early: [String: [(at: Date, event: JSONObject)]] = [:]
        /// The geo replica holding each watch, by watch id.
        var replicas: [String: Int] = [:]
    }

    private let state = Mutex(State())
    private let geo: AsyncServiceClient
    /// Watches one socket may hold.
    static let perSocket = 20
    /// Renewed this long after the last renewal (`EdgeSettings.watchRenewal`).
    private let renewAfter: TimeInterval
    static let lease = GeoRules.watchLease

    init(geo: AsyncServiceClient, renewAfter: TimeInterval) {
        self.geo = geo
        self.renewAfter = renewAfter
    }

    // MARK: What sockets ask

    /// The socket's token, signed in or renewed.
    func signedIn(socketID: Int, token: String) {
        state.withLock { $0.tokens[socketID] = token }
    }

    /// Opens the watch `key` of a socket (replacing one of the same key) and sends
    /// it `watch.opened`, or an `error` naming the key.
    func open(socketID: Int, key: String, body: JSONObject, outbox: EventHub.Outbox) async {
        let (token, replaced, full) = state.withLock { state -> (String?, String?, Bool) in
            let keys = state.keys[socketID] ?? [:]
            let opening = state.opening[socketID] ?? []
            let held = Set(keys.keys).union(opening)
            let full = !held.contains(key) && held.count >= Self.perSocket
            if !full, state.tokens[socketID] != nil { state.opening[socketID, default: []].insert(key) }
            return (state.tokens[socketID], keys[key], full)
        }
        guard let token else {
            outbox.send(Self.error(key: key, ServiceError.unauthenticated("send a token first")))
            return
        }
        guard !full else {
            outbox.send(Self.error(key: key, ServiceError(code: .rateLimited, message: "a socket holds at most \(Self.perSocket) watches")))
            return
        }
        defer {
            state.withLock { state in
                state.opening[socketID]?.remove(key)
                if state.opening[socketID]?.isEmpty == true { state.opening[socketID] = nil }
            }
        }
        if let replaced { await close(socketID: socketID, key: key, watchId: replaced, token: token) }
        do {
            let (reply, replica) = try await call(GeoAPI.watchOpen.name, body, token: token)
            guard case .object(let watch)? = reply["watch"], case .string(let watchId)? = watch["id"] else { throw ServiceError.internal }
            let early = state.withLock { state -> [JSONObject]? in
                state.replicas[watchId] = replica
                guard state.tokens[socketID] != nil else { return nil }  // the socket closed meanwhile
                state.entries[watchId] = Entry(socketID: socketID, key: key, outbox: outbox, body: body, watchId: watchId)
                state.keys[socketID, default: [:]][key] = watchId
                return state.early.removeValue(forKey: watchId)?.map(\.event) ?? []
            }
            guard let early else {
                return await close(socketID: socketID, key: key, watchId: watchId, token: token)
            }
            outbox.send(Self.opened(key: key, reply: reply, reset: false))
            for event in early { deliver(event) }
        } catch {
            outbox.send(Self.error(key: key, error as? ServiceError ?? .internal))
        }
    }

    /// Closes a socket's watch `key` (`unwatch`).
    func unwatch(socketID: Int, key: String) async {
        let (watchId, token) = state.withLock { state in (state.keys[socketID]?[key], state.tokens[socketID]) }
        guard let watchId else { return }
        await close(socketID: socketID, key: key, watchId: watchId, token: token)
    }

    /// Closes every watch of a socket that has closed.
    func socketClosed(_ socketID: Int) async {
        let (watches, token) = state.withLock { state -> ([String: String], String?) in
            let watches = state.keys.removeValue(forKey: socketID) ?? [:]
            for watchId in watches.values { state.entries[watchId] = nil }
            return (watches, state.tokens.removeValue(forKey: socketID))
        }
        guard let token else { return }
        for watchId in watches.values { await closeAtGeo(watchId, token: token) }
    }

    private func close(socketID: Int, key: String, watchId: String, token: String?) async {
        state.withLock { state in
            state.entries[watchId] = nil
            if state.keys[socketID]?[key] == watchId { state.keys[socketID]?[key] = nil }
        }
        if let token { await closeAtGeo(watchId, token: token) }
    }

    /// `geo.watch.close` at the replica holding the watch; an error changes nothing
    /// (the lease ends it). A replica that is down is not waited for: its lease, or
    /// its restart, ends the watch there.
    private func closeAtGeo(_ watchId: String, token: String) async {
        if geo.replicas.count == 1 || holderTakesRequests(watchId) {
            _ = try? await call(GeoAPI.watchClose.name, ["id": .string(watchId)], token: token, watchId: watchId)
        }
        state.withLock { _ = $0.replicas.removeValue(forKey: watchId) }
    }

    // MARK: What geo sends

    /// One of geo's watch events (`geo.watch/<userId>/`): to the socket whose watch it
    /// is, as `watch.entered`, `watch.changed` or `watch.left`; a gap or an expiry
    /// opens the watch again.
    func deliver(_ event: JSONObject) {
        guard case .string(let watchId)? = event["watchId"], case .number(let number)? = event["seq"],
              let seq = Int(exactly: number.doubleValue), case .string(let type)? = event["type"] else { return }
        enum Next { case send(EventHub.Outbox, String), reopen(Entry), none }
        let next = state.withLock { state -> Next in
            guard var entry = state.entries[watchId] else {
                state.early[watchId, default: []].append((Date(), event))
                return .none
            }
            guard seq == entry.seq + 1, type != WatchEvent.Kind.expired.rawValue else {
                state.entries[watchId] = nil
                return .reopen(entry)
            }
            entry.seq = seq
            state.entries[watchId] = entry
            var message = event
            message["type"] = .string("watch.\(type)")
            message["id"] = .string(entry.key)
            message["seq"] = nil
            message["watchId"] = nil
            return .send(entry.outbox, String(decoding: JSONWriter.data(.object(message)), as: UTF8.self))
        }
        switch next {
        case .send(let outbox, let text): outbox.send(text)
        case .reopen(let entry): Task { await reopen(entry) }
        case .none: break
        }
    }

    /// Renews the watches due, opens again those whose events were lost, and forgets
    /// early events nobody claimed: every few seconds, from the hub's sweep. Returns
    /// the renewals and reopenings it started, for whoever wants to wait for them.
    @discardableResult
    func sweep(now: Date = Date()) -> [Task<Void, Never>] {
        let renewAfter = self.renewAfter
        let (due, short) = state.withLock { state -> ([(Entry, String)], [Entry]) in
            state.early = state.early.filter { now.timeIntervalSince($0.value[0].at) < 10 }
            var due: [(Entry, String)] = [], short: [Entry] = []
            for (watchId, entry) in state.entries {
                if let shortfall = entry.shortfall, now.timeIntervalSince(shortfall.since) >= Self.arrivalGrace {
                    state.entries[watchId]?.shortfall = nil
                    if entry.seq < shortfall.seq {
                        state.entries[watchId] = nil
                        short.append(entry)
                        continue
                    }
                }
                guard now.timeIntervalSince(entry.renewedAt) >= renewAfter, let token = state.tokens[entry.socketID] else { continue }
                state.entries[watchId]?.renewedAt = now
                due.append((entry, token))
            }
            return (due, short)
        }
        var started = short.map { entry in Task { await reopen(entry) } }
        for (entry, token) in due {
            started.append(Task {
                // Its replica is down or behind (the probe says so within a second):
                // open it on another now rather than wait out a renewal's timeout.
                if geo.replicas.count > 1 && !holderTakesRequests(entry.watchId) {
                    await reopen(entry)
                    return
                }
                do {
                    let (reply, _) = try await call(GeoAPI.watchRenew.name, ["id": .string(entry.watchId), "lease": .number(.integer(Int64(Self.lease)))],
                                                    token: token, watchId: entry.watchId)
                    if case .object(let watch)? = reply["watch"], case .number(let number)? = watch["seq"], let published = Int(exactly: number.doubleValue) {
                        state.withLock { state in
                            guard let current = state.entries[entry.watchId], current.seq < published, current.shortfall == nil else { return }
                            state.entries[entry.watchId]?.shortfall = Shortfall(seq: published, since: Date())
                        }
                    }
                } catch let error as ServiceError where error.code == .notFound {
                    await reopen(entry)
                } catch where geo.replicas.count > 1 && !holderTakesRequests(entry.watchId) {
                    // Its replica is gone or behind: another holds it from now on.
                    await reopen(entry)
                } catch {
                    // Geo did not answer: the next sweep tries again, well inside the lease.
                    state.withLock { $0.entries[entry.watchId]?.renewedAt = now.addingTimeInterval(-renewAfter + min(10, renewAfter / 2)) }
                }
            })
        }
        return started
    }

    /// Opens a watch again after geo lost it or events were lost, and tells the socket.
    private func reopen(_ entry: Entry) async {
        guard let token = state.withLock({ $0.tokens[entry.socketID] }) else { return }
        await closeAtGeo(entry.watchId, token: token)
        do {
            let (reply, replica) = try await call(GeoAPI.watchOpen.name, entry.body, token: token)
            guard case .object(let watch)? = reply["watch"], case .string(let watchId)? = watch["id"] else { throw ServiceError.internal }
            let early = state.withLock { state -> [JSONObject]? in
                state.replicas[watchId] = replica
                guard state.keys[entry.socketID]?[entry.key] == entry.watchId else { return nil }  // closed or replaced meanwhile
                var renewed = entry
                renewed.watchId = watchId
                renewed.seq = 0
                renewed.renewedAt = Date()
                renewed.shortfall = nil
                state.entries[entry.watchId] = nil
                state.entries[watchId] = renewed
                state.keys[entry.socketID]?[entry.key] = watchId
                return state.early.removeValue(forKey: watchId)?.map(\.event) ?? []
            }
            guard let early else {
                await closeAtGeo(watchId, token: token)
                return
            }
            entry.outbox.send(Self.opened(key: entry.key, reply: reply, reset: true))
            for event in early { deliver(event) }
        } catch {
            state.withLock { state in
                if state.keys[entry.socketID]?[entry.key] == entry.watchId { state.keys[entry.socketID]?[entry.key] = nil }
            }
            entry.outbox.send(Self.error(key: entry.key, error as? ServiceError ?? .internal, type: "watch.closed"))
        }
    }

    // MARK: Messages

    /// Calls geo; with `watchId`, at the replica holding that watch. Returns the
    /// reply's body and the replica that answered.
    private func call(_ op: String, _ body: JSONObject, token: String, watchId: String? = nil) async throws -> (JSONObject, Int) {
        let holder = watchId.flatMap { id in state.withLock { $0.replicas[id] } }
        let reply = try await geo.callRaw(op: op, body: .object(body), token: token, replica: holder)
        switch reply.envelope.result {
        case .failure(let error): throw error
        case .success(let object): return (object, reply.replica)
        }
    }

    private func holderTakesRequests(_ watchId: String) -> Bool {
        guard let holder = state.withLock({ $0.replicas[watchId] }) else { return true }
        return geo.replicas.isTakingRequests(holder)
    }

    /// `{"type":"watch.opened","id":…,"hits":…,"nextCursor":…,"center":…,"reset":…}`
    /// (`users` instead of `hits` and `nextCursor` for people).
    static func opened(key: String, reply: JSONObject, reset: Bool) -> String {
        var message = reply
        message["watch"] = nil
        message["type"] = .string("watch.opened")
        message["id"] = .string(key)
        message["reset"] = .bool(reset)
        return String(decoding: JSONWriter.data(.object(message)), as: UTF8.self)
    }

    /// `{"type":"error","id":…,"code":…,"field":…,"detail":…}`; `watch.closed` with
    /// the same members for a watch the edge could not open again.
    static func error(key: String, _ error: ServiceError, type: String = "error") -> String {
        var message: JSONObject = ["type": .string(type), "id": .string(key), "code": .string(error.code.rawValue),
                                   "detail": .string(error.message)]
        if let field = error.field { message["field"] = .string(field) }
        return String(decoding: JSONWriter.data(.object(message)), as: UTF8.self)
    }
}
