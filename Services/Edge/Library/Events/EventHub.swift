import Contracts
import Foundation
import Logging
import Metrics
import ServiceClient
import Synchronization
import Wire

/// The edge's one subscription to chat's and geo's events, fanned out to the
/// WebSockets of the users they concern.
///
/// A thread per source holds an `EventSubscriber` with the edge's service key,
/// subscribed to every user's topics by their prefix; each event goes to the open
/// sockets of the user its topic names, as the text of an event message. A socket
/// holds at most `EdgeSettings.socketBacklog` unsent events: past that it is closed,
/// so a slow reader never grows the edge's memory.
final class EventHub: Sendable {
    /// One socket as the hub sees it: where its events are written, how many are not
    /// written yet, and what ends it (a backlog past `EdgeSettings.socketBacklog`, a
    /// token that did not come or expired, the reader's end).
    ///
    /// Events are written straight to the socket's channel by whichever thread has
    /// them, not by a task per socket waiting on a queue: 10,000 sockets are 10,000
    /// tasks fewer.
    final class Outbox: Sendable {
        /// What the hub writes to a socket: an event's text, or a ping.
        enum Message: Sendable, Equatable {
            case text(String)
            case ping
        }

        /// Writes one message to the socket, and calls back once it is written (or
        /// could not be).
        typealias Writer = @Sendable (_ message: Message, _ written: @escaping @Sendable () -> Void) -> Void

        private let writer: Writer
        /// Asks the socket's handler to close it with `closing`.
        private let requestClose: @Sendable () -> Void
        private let unwritten = Atomic<Int>(0)
        /// Set when the backlog overflowed: the socket is closed with 1008.
        let overflowed = Atomic<Bool>(false)
        /// Until when the socket may stay open without a (new) token, and whether a
        /// token has signed it in.
        private let expiry: Mutex<(deadline: Date, signedIn: Bool)>
        /// When the client last sent a frame, a pong or a message.
        private let lastHeard = Mutex(Date())
        /// Closed, and why (the first reason wins).
        private let state = Mutex<(closed: Bool, reason: EventSocket.Closing?)>((false, nil))

        init(deadline: Date = .distantFuture, writer: @escaping Writer, requestClose: @escaping @Sendable () -> Void = {}) {
            self.writer = writer
            self.requestClose = requestClose
            expiry = Mutex((deadline, false))
        }

        /// Writes an event; false when the socket's backlog is full (it is then
        /// closed) or the socket is closing.
        @discardableResult
        func send(_ text: String) -> Bool { write(.text(text)) }

        /// Pings the socket (counted with its events: a peer that reads nothing gets no
        /// more than the backlog of them either).
        func ping() { write(.ping) }

        @discardableResult
        private func write(_ message: Message) -> Bool {
            guard !state.withLock({ $0.closed }) else { return false }
            guard unwritten.add(1, ordering: .relaxed).newValue <= EdgeSettings.socketBacklog else {
                unwritten.subtract(1, ordering: .relaxed)
                overflowed.store(true, ordering: .relaxed)
                close(.slowReader)
                return false
            }
            writer(message) { self.unwritten.subtract(1, ordering: .relaxed) }
            return true
        }

        /// A token signed the socket in or renewed it: open until `deadline`.
        func signedIn(until deadline: Date) {
            expiry.withLock { $0 = (deadline, true) }
        }

        /// The client sent a frame (a pong, a message): it is there.
        func heard(at now: Date = Date()) {
            lastHeard.withLock { $0 = now }
        }

        /// Closes the socket when its token's deadline has passed, or when the client
        /// has answered nothing, not even the pings, for `EdgeSettings.socketSilenceLimit`;
        /// true if it did.
        func expire(at now: Date) -> Bool {
            let (deadline, signedIn) = expiry.withLock { $0 }
            if deadline <= now {
                close(.unauthenticated(signedIn ? "the token expired; send a new one before it does" : "send a token first"))
                return true
            }
            if now.timeIntervalSince(lastHeard.withLock { $0 }) > EdgeSettings.socketSilenceLimit {
                close(.silent)
                return true
            }
            return false
        }

        /// Stops the socket's events, with why it closes (nil: nothing to tell the
        /// client, e.g. it went away). A reason given here, from a hub thread, asks
        /// the socket's handler to close it; the handler itself passes `fromSocket`.
        func close(_ closing: EventSocket.Closing?, fromSocket: Bool = false) {
            let first = state.withLock { state -> Bool in
                guard !state.closed else { return false }
                state = (true, closing)
                return true
            }
            if first, closing != nil, !fromSocket { requestClose() }
        }

        /// Why the socket closes, once something has decided it.
        var closing: EventSocket.Closing? { state.withLock { $0.reason } }
    }

    private let sources: [(service: String, endpoint: String, prefixes: [String])]
    private let settings: EdgeSettings
    /// The sockets' live queries; nil for a hub without geo (tests of the hub alone).
    let watches: SocketWatches?
    private let logger: Logger
    private let sockets = Mutex<[String: [Int: Outbox]]>([:])
    /// Every open socket, signed in or not, for the sweep of deadlines: one thread
    /// for all of them rather than a timer each.
    private let watched = Mutex<[ObjectIdentifier: Outbox]>([:])
    private let nextSocket = Atomic<Int>(0)
    private let running = Atomic<Bool>(false)
    private let threads = Mutex<[ServiceThread]>([])
    private let eventsSent = Counter(label: "hereabouts_edge_events_sent_total")
    private let socketsOpen = Gauge(label: "hereabouts_edge_websockets_open")
    /// Sockets upgraded and not yet closed, signed in or not.
    let openCount = Atomic<Int>(0)
    /// The same, by client address (budget key).
    private let openByAddress = Mutex<[String: Int]>([:])

    init(settings: EdgeSettings, logger: Logger, watches: SocketWatches? = nil) {
        self.settings = settings
        self.logger = logger
        self.watches = watches
        let topics = [(ChatAPI.service, [ChatAPI.messageTopicPrefix]), (GeoAPI.service, [GeoAPI.fenceTopicPrefix, GeoAPI.watchTopicPrefix])]
        sources = topics.compactMap { service, prefixes in
            settings.eventsEndpoint(of: service).map { (service, $0, prefixes) }
        }
    }

    // MARK: Sockets

    /// Takes a place for a new socket from the client `address` (its budget key), or
    /// the refusal when the edge, or that address, holds its maximum: so one address
    /// cannot take every place and have everyone else refused.
    func admitSocket(from address: String) -> Problem? {
        let admitted = openByAddress.withLock { open -> Bool in
            guard open[address, default: 0] < settings.maxSocketsPerAddress else { return false }
            open[address, default: 0] += 1
            return true
        }
        guard admitted else {
            return Problem(ServiceError.rateLimited("this address has \(settings.maxSocketsPerAddress) sockets open, the most there may be",
                                                    retryAfterMs: 5_000))
        }
        let (_, count) = openCount.add(1, ordering: .relaxed)
        guard count <= settings.maxSockets else {
            openCount.subtract(1, ordering: .relaxed)
            release(address)
            return SocketAdmission.edgeFull
        }
        socketsOpen.record(count)
        return nil
    }

    /// Gives back the place `admitSocket(from:)` took.
    func socketClosed(from address: String) {
        let (_, count) = openCount.subtract(1, ordering: .relaxed)
        socketsOpen.record(count)
        release(address)
    }

    private func release(_ address: String) {
        openByAddress.withLock { open in
            open[address, default: 1] -= 1
            if open[address] == 0 { open[address] = nil }
        }
    }

    /// Keeps an eye on a socket's deadline from its upgrade until `unwatch`.
    func watch(_ outbox: Outbox) {
        watched.withLock { $0[ObjectIdentifier(outbox)] = outbox }
    }

    func unwatch(_ outbox: Outbox) {
        _ = watched.withLock { $0.removeValue(forKey: ObjectIdentifier(outbox)) }
    }

    /// Closes the sockets whose deadline has passed, every quarter of a second, and
    /// pings every open socket every `EdgeSettings.socketPingInterval`: one thread for
    /// all of them, where a task each would hold kilobytes a socket.
    private func sweepDeadlines() {
        var nextPing = Date().addingTimeInterval(EdgeSettings.socketPingInterval)
        var nextWatchSweep = Date()
        while running.load(ordering: .relaxed) {
            Thread.sleep(forTimeInterval: 0.25)
            let now = Date()
            if now >= nextWatchSweep {
                nextWatchSweep = now.addingTimeInterval(5)
                watches?.sweep(now: now)
            }
            let open = watched.withLock { Array($0.values) }
            for outbox in open where outbox.expire(at: now) {
                unwatch(outbox)
            }
            if now >= nextPing {
                nextPing = now.addingTimeInterval(EdgeSettings.socketPingInterval)
                open.forEach { $0.ping() }
            }
        }
    }

    /// Registers a signed-in socket of `userId`, first sending it `greeting` (so that
    /// no event is written before it); nil when the user has their maximum open.
    func register(_ outbox: Outbox, userId: String, greeting: String) -> Int? {
        let id = nextSocket.add(1, ordering: .relaxed).newValue
        return sockets.withLock { sockets in
            guard (sockets[userId]?.count ?? 0) < settings.maxSocketsPerUser else { return nil }
            outbox.send(greeting)
            sockets[userId, default: [:]][id] = outbox
            return id
        }
    }

    /// The signed-in sockets `userId` has open.
    func socketCount(of userId: String) -> Int {
        sockets.withLock { $0[userId]?.count ?? 0 }
    }

    func unregister(_ id: Int, userId: String) {
        sockets.withLock { sockets in
            sockets[userId]?[id] = nil
            if sockets[userId]?.isEmpty == true { sockets[userId] = nil }
        }
    }

    /// Sends `text` to every socket of `userId`.
    func deliver(_ text: String, to userId: String) {
        let outboxes = sockets.withLock { $0[userId].map { Array($0.values) } ?? [] }
        for outbox in outboxes where outbox.send(text) {
            eventsSent.increment()
        }
    }

    // MARK: Following the services' events

    func start() {
        guard !running.exchange(true, ordering: .relaxed) else { return }
        let started = sources.map { source in
            ServiceThread(name: "events-\(source.service)") { [self] in follow(source) }
        } + [ServiceThread(name: "socket-deadlines") { [self] in sweepDeadlines() }]
        threads.withLock { $0 = started }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        threads.withLock { threads in
            threads.forEach { $0.join() }
            threads = []
        }
        sockets.withLock { sockets in
            for outbox in sockets.values.flatMap(\.values) { outbox.close(nil) }
            sockets = [:]
        }
    }

    private func follow(_ source: (service: String, endpoint: String, prefixes: [String])) {
        let subscriber: EventSubscriber
        do {
            subscriber = try EventSubscriber(endpoint: source.endpoint, curve: try settings.curve(of: source.service))
            for prefix in source.prefixes { try subscriber.subscribe(prefix) }
        } catch {
            logger.critical("cannot follow \(source.service)'s events", metadata: ["error": "\(error)"])
            return
        }
        defer { subscriber.close() }
        while running.load(ordering: .relaxed) {
            guard let event = try? subscriber.next(timeout: 0.25) else { continue }
            if event.topic.hasPrefix(GeoAPI.watchTopicPrefix) {
                // A watch's events go to the one socket that opened it.
                if case .object(let body)? = try? JSONParser.parse(event.body) { watches?.deliver(body) }
                continue
            }
            guard let (userId, text) = Self.socketMessage(event) else { continue }
            deliver(text, to: userId)
        }
    }

    /// An event as a socket message for the user its topic names:
    /// `{"type":"chat.message","message":…}` or `{"type":"fence.entered","postId":…,"at":…}`.
    static func socketMessage(_ event: EventSubscriber.Event) -> (userId: String, text: String)? {
        if event.topic.hasPrefix(ChatAPI.messageTopicPrefix) {
            let userId = event.topic.dropFirst(ChatAPI.messageTopicPrefix.count).dropLast()
            return (String(userId), #"{"type":"chat.message","message":"# + String(decoding: event.body, as: UTF8.self) + "}")
        }
        if event.topic.hasPrefix(GeoAPI.fenceTopicPrefix), case .object(var body)? = try? JSONParser.parse(event.body),
           case .string(let kind)? = body["type"] {
            let userId = event.topic.dropFirst(GeoAPI.fenceTopicPrefix.count).dropLast()
            body["type"] = .string("fence.\(kind)")
            return (String(userId), String(decoding: JSONWriter.data(.object(body)), as: UTF8.self))
        }
        return nil
    }
}
