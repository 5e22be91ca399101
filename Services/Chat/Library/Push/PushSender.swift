import Contracts
import Crypto
import Foundation
import Logging
import NIOCore
import Push
import ServiceKit
import Synchronization

/// Delivers chat's pushes on a thread of its own, up to `PushSettings.concurrency`
/// pushes in flight: each pass takes every message committed since the last (their
/// first tries) and the retries that are due. A send that commits a message to be
/// pushed wakes it. Per push: delivered or refused for good, it is done; refused for
/// now (429, 5xx, no connection), it is tried again after 5 s doubling up to an hour,
/// for a day (from a `push_outbox` row); the device gone (APNs 410 or `BadDeviceToken`,
/// Web Push 404/410), the device goes. Before a batch leaves, auth
/// is asked which of the devices' sessions have ended (signed out, revoked): those
/// devices go instead of getting the push.
///
/// A push whose delivery is not recorded before a crash is sent again on the next
/// start; it carries the message's id as its collapse id, so the device shows it once.
///
/// With `PushPriority.background` (the default) the sender's thread runs at nice 19, so
/// that sends get the cores first. What it writes (SQLite's one writer, which every send
/// waits for) and its questions to auth (whose socket may start ZeroMQ's shared threads)
/// it hands to a thread of normal priority (`NormalPriorityLane`), and whole passes too
/// while it is behind (a message waited longer than `PushSettings.catchUpAfter`): on a
/// machine whose cores are all busy, nice 19 alone would leave pushes seconds late.
final class PushSender: Sendable {
    /// How long a push is tried (and how long APNs and Web Push keep it for an offline device).
    static let giveUpAfter: TimeInterval = 86_400
    /// Retries read per step (first tries: `PushSettings.firstTries` messages a step).
    static let batch = 500
    /// How long a session auth called active is believed without asking again.
    static let sessionRecheck: TimeInterval = 60
    /// Passes begin at most this often: a push after a quiet spell leaves at once; under a
    /// stream of messages each pass takes what arrived in the last few milliseconds.
    static let passSpacing: TimeInterval = 0.005
    /// The queue's figures (`health`'s pending and oldest, when the next retry is due) are
    /// read again after a pass in which a push failed, and otherwise at most this often:
    /// under a stream of messages a pass begins every few milliseconds, and reading them
    /// after each cost the sender a sixth of its work a push.
    static let queueRefresh: TimeInterval = 0.1
    /// Once a message waited longer than `PushSettings.catchUpAfter` for its push, passes
    /// run at normal priority until none has for this long (so that a load that keeps
    /// every core busy does not hand them back to the background after each pass).
    static let catchUpHold: TimeInterval = 10
    /// Messages a pass in the background takes per step: between steps it sees whether
    /// it has fallen behind, so a burst (a message to a thousand devices each) is not one
    /// long step at nice 19.
    static let backgroundStep = 200

    struct Counters {
        var sent = 0
        var failed = 0
        var removed = 0
        /// Passes run on the normal-priority lane because the sender was behind.
        var caughtUp = 0
    }

    /// What a pass found, published at its end in one piece: an error is never shown
    /// before the retry it caused is counted.
    struct QueueState {
        var pending = 0
        var oldest: Double?
        var oldestFirstTry: Double?
        var lastError: String?
        /// When the figures were read, and the next retry due then.
        var checkedAt = Date.distantPast
        var nextDue: Date?
        /// Passes run at normal priority until then (`catchUpHold`).
        var catchingUpUntil = Date.distantPast
    }

    private let store: ChatStore
    private let settings: PushSettings
    private let http: PushHTTP
    private let apns: APNsClient?
    private let webPush: WebPushClient
    /// Which of these sessions ended (auth.sessions.ended); throws when auth cannot say.
    private let endedSessions: @Sendable ([String]) throws -> [String]
    private let retryDelay: TimeInterval
    private let logger: Logger
    private let counters = Mutex(Counters())
    private let queue = Mutex(QueueState())
    private let liveSessions = Mutex<[String: Date]>([:])
    private let loop: Mutex<WorkerLoop?> = Mutex(nil)
    /// Where the sender's writes and questions to auth run: nil when on its own thread (`normal`).
    private let foreground: NormalPriorityLane?
    private let senderThread = Mutex<Int32?>(nil)

    init(store: ChatStore, settings: PushSettings, vapid: VAPIDKey, retryDelay: TimeInterval = 5,
         endedSessions: @escaping @Sendable ([String]) throws -> [String], logger: Logger) {
        self.store = store
        self.settings = settings
        self.retryDelay = retryDelay
        self.endedSessions = endedSessions
        self.logger = logger
        let http = PushHTTP(caFile: settings.caFile)
        self.http = http
        foreground = settings.priority == .background ? NormalPriorityLane(name: "push-record") : nil
        apns = settings.apns.map { APNsClient(credentials: $0.credentials, url: $0.url, http: http) }
        webPush = WebPushClient(vapid: vapid, http: http)
    }

    /// As of the last pass: `health` answers from memory.
    var queueStatus: PushQueueStatus {
        let queue = queue.withLock { $0 }
        let counters = counters.withLock { $0 }
        return PushQueueStatus(pending: queue.pending, oldestPendingSeconds: queue.oldest, sent: counters.sent, failed: counters.failed,
                               removed: counters.removed, lastError: queue.lastError, transports: settings.transports)
    }

    /// The kernel ids of the sender's thread and the HTTP client's loops, once started (tests).
    var threadIDs: [Int32] { (senderThread.withLock { $0 }.map { [$0] } ?? []) + http.threadIDs }

    /// Passes run at normal priority because the sender was behind (tests).
    var passesCaughtUp: Int { counters.withLock { $0.caughtUp } }

    func start() {
        logger.info("pushes leave through \(settings.transports.joined(separator: "; ")), at \(settings.priority.rawValue) priority")
        let worker = WorkerLoop(name: "push", spacing: Self.passSpacing, prepare: { [self] in
            if settings.priority == .background { ThreadScheduling.enterBackground() }
            senderThread.withLock { $0 = ThreadScheduling.currentThreadID() }
        }, pass: { [self] in pass() })
        foreground?.start()
        // Made here, at the service's priority, not by the sender's thread at nice 19: a
        // pass that catches up (`catchingUp`) needs loops that get their share of the cores.
        http.makeLoops()
        loop.withLock { $0 = worker }
        worker.start()
    }

    /// Returns once the pushes under way have finished.
    func stop() {
        loop.withLock { $0 }?.stop()
        foreground?.stop()
        http.shutdown()
    }

    func wake() {
        loop.withLock { $0 }?.wake()
    }

    private var isStopped: Bool { loop.withLock { $0 }?.isStopped ?? true }

    /// A pass on the sender's thread, or on the normal-priority lane while the sender is
    /// behind: at nice 19 on a machine whose cores are all busy it gets a sliver of a core
    /// (BENCHMARKS.md, Pushes), and pushes must not fall minutes behind for that.
    private func pass() -> Date {
        guard let foreground else { return runPass(inBackground: false) }
        if !catchingUp(waited: queue.withLock { $0.oldestFirstTry }) {
            let next = runPass(inBackground: true)
            // A pass that met a message waiting too long stopped before its pushes: the lane takes them.
            guard catchingUp(waited: nil) else { return next }
        }
        counters.withLock { $0.caughtUp += 1 }
        return (try? foreground.run { [self] in runPass(inBackground: false) }) ?? Date()
    }

    /// Whether passes run on the lane: a message has waited `waited` seconds for its push,
    /// longer than `PushSettings.catchUpAfter`, or one had less than `catchUpHold` ago.
    private func catchingUp(waited: Double?) -> Bool {
        let now = Date()
        let (catching, began) = queue.withLock { state in
            let behind = (waited ?? 0) > settings.catchUpAfter
            let began = behind && now >= state.catchingUpUntil
            if behind { state.catchingUpUntil = now.addingTimeInterval(Self.catchUpHold) }
            return (now < state.catchingUpUntil, began)
        }
        if began {
            logger.info("pushes fell behind (a message waited \(String(format: "%.1f", waited ?? 0)) s): the sender's passes run at normal priority")
        }
        return catching
    }

    /// Due pushes, batch by batch; returns when the next is due (at most 30 s on).
    /// - Parameter inBackground: on the sender's own thread at nice 19 (`catchingUp`).
    private func runPass(inBackground: Bool) -> Date {
        var next = Date().addingTimeInterval(30)
        var lastError: String?
        do {
            try deliverDue(lastError: &lastError, inBackground: inBackground)
            let now = Date()
            let (checkedAt, keptDue) = queue.withLock { ($0.checkedAt, $0.nextDue) }
            if lastError != nil || now.timeIntervalSince(checkedAt) >= Self.queueRefresh {
                let current = try store.pushQueue(now: now)
                queue.withLock { state in
                    state.pending = current.pending
                    state.oldest = current.oldest
                    state.oldestFirstTry = current.oldestFirstTry
                    state.lastError = lastError ?? state.lastError
                    state.checkedAt = now
                    state.nextDue = current.nextDue
                }
                if let due = current.nextDue { next = min(next, due) }
            } else {
                // Read again soon, so that what this pass delivered shows even if no message follows.
                next = checkedAt.addingTimeInterval(Self.queueRefresh)
                // Only this thread queues retries, and a pass that did read the figures, so no
                // retry is due before the one kept; one due by now was this pass's to take.
                if let due = keptDue, due > now { next = min(next, due) }
            }
        } catch {
            logger.error("the push sender's pass failed", metadata: ["error": "\(error)"])
            queue.withLock { $0.lastError = lastError ?? $0.lastError }
        }
        return next
    }

    /// - Parameter lastError: the last reason a push of this pass failed, if one did.
    /// - Parameter inBackground: take smaller steps, and stop at one whose oldest message
    ///   has waited too long (the lane takes it, `pass`).
    private func deliverDue(lastError: inout String?, inBackground: Bool) throws {
        // Each retry once per pass: one whose outcome could not be recorded waits for the next.
        var tried = Set<Int64>()
        let firstTries = inBackground ? min(settings.firstTries, Self.backgroundStep) : settings.firstTries
        while !isStopped {
            var batch = try store.pendingPushes(now: Date(), retryLimit: Self.batch, firstTryLimit: firstTries)
            batch.pushes.removeAll { $0.id.map(tried.contains) ?? false }
            if batch.pushes.isEmpty && batch.cursor == nil { return }
            if inBackground, let sent = batch.pushes.lazy.filter({ $0.id == nil }).map(\.createdAt).min(),
               catchingUp(waited: Date().timeIntervalSince(sent)) {
                return
            }
            tried.formUnion(batch.pushes.compactMap(\.id))
            let ended = sessionsEnded(among: Set(batch.pushes.map(\.session)))
            if !ended.isEmpty {
                let forgotten = try inForeground { [store] in try store.forgetDevices(ofSessions: Array(ended)) }
                counters.withLock { $0.removed += forgotten }
            }
            let results = deliver(batch.pushes.filter { !ended.contains($0.session) })
            var outcomes = outcomes(of: results, lastError: &lastError)
            outcomes.cursor = batch.cursor
            try inForeground { [store, outcomes] in try store.record(outcomes) }
            // More retries due, or more messages, than a step takes; messages from now on wait for the next pass.
            if !batch.moreRetries && !batch.moreFirstTries { return }
        }
    }

    /// Runs `work` on a thread of normal priority when the sender's own runs in the background.
    private func inForeground<T: Sendable>(_ work: @escaping @Sendable () throws -> T) throws -> T {
        guard let foreground else { return try work() }
        return try foreground.run(work)
    }

    /// The sessions among these that auth says have ended; none when auth cannot say
    /// (the pushes leave, and the question is asked again next time).
    private func sessionsEnded(among sessions: Set<String>) -> Set<String> {
        let now = Date()
        let unknown = liveSessions.withLock { live in
            sessions.filter { live[$0].map { now.timeIntervalSince($0) > Self.sessionRecheck } ?? true }
        }
        guard !unknown.isEmpty else { return [] }
        var ended = Set<String>()
        do {
            for chunk in Array(unknown).chunked(SessionsRequest.maxIDs) {
                ended.formUnion(try inForeground { [endedSessions] in try endedSessions(Array(chunk)) })
            }
        } catch {
            logger.warning("cannot ask auth which sessions ended; pushing anyway", metadata: ["error": "\(error)"])
            return []
        }
        liveSessions.withLock { live in
            live = live.filter { now.timeIntervalSince($0.value) <= Self.sessionRecheck }
            for session in unknown where !ended.contains(session) { live[session] = now }
        }
        return ended
    }

    /// Sends every push, and waits for all of them: each device's in the order they were
    /// queued, one after another (so its last badge is the newest), devices side by side,
    /// at most `settings.concurrency` in flight. This thread prepares each device's first
    /// push (payload, token, encryption) and hands those it can start now to their event
    /// loop in one task; the loops carry them, send the next of each device, and record
    /// the outcomes.
    private func deliver(_ pushes: [ChatStore.QueuedPush]) -> [(ChatStore.QueuedPush, PushOutcome)] {
        guard !pushes.isEmpty else { return [] }
        // Each device's pushes in the order they were queued; the devices in the order first met.
        var chains: [[ChatStore.QueuedPush]] = [], chainOf: [String: Int] = [:]
        for push in pushes {
            if let chain = chainOf[push.deviceId] {
                chains[chain].append(push)
            } else {
                chainOf[push.deviceId] = chains.count
                chains.append([push])
            }
        }
        let results = Mutex<[(ChatStore.QueuedPush, PushOutcome)]>([])
        let window = DispatchSemaphore(value: settings.concurrency)
        let all = DispatchGroup()
        var waiting = chains[...]
        while let chain = waiting.popFirst() {
            window.wait()
            var starting = [chain]
            // As many more as the window has room for now (at a pass's start, usually all).
            while let next = waiting.first, window.wait(timeout: .now()) == .success {
                starting.append(next)
                waiting.removeFirst()
            }
            var byLoop: [ObjectIdentifier: (loop: any EventLoop, chains: [(ArraySlice<ChatStore.QueuedPush>, PreparedPush)])] = [:]
            for chain in starting {
                // A chain has at least the push that made it.
                let prepared = prepare(chain[0])
                byLoop[ObjectIdentifier(prepared.eventLoop), default: (prepared.eventLoop, [])].chains.append((chain[...], prepared))
                all.enter()
            }
            for (loop, started) in byLoop.values {
                loop.execute { [self] in
                    for (chain, first) in started {
                        sendInOrder(chain, first: first).whenComplete { result in
                            if case .success(let outcomes) = result { results.withLock { $0 += outcomes } }
                            window.signal()
                            all.leave()
                        }
                    }
                }
            }
        }
        all.wait()
        return results.withLock { $0 }
    }

    /// One device's pushes, each after the one before has its answer, `first` being the
    /// first of them prepared. Once the device is gone the rest are not sent (they go with it).
    ///
    /// Every step stays on the loop the answer came on: a future of another loop in the
    /// chain would cost two thread hand-overs (a wake-up of each loop) per push.
    private func sendInOrder(_ pushes: ArraySlice<ChatStore.QueuedPush>, first prepared: PreparedPush)
        -> EventLoopFuture<[(ChatStore.QueuedPush, PushOutcome)]> {
        guard let first = pushes.first else { return prepared.eventLoop.makeSucceededFuture([]) }
        let sent = prepared.send().recover { error in .retry("\(error)", after: nil) }
        return sent.flatMap { outcome in
            let rest = pushes.dropFirst()
            if case .gone = outcome {
                return sent.eventLoop.makeSucceededFuture(pushes.map { ($0, outcome) })
            }
            guard let next = rest.first else { return sent.eventLoop.makeSucceededFuture([(first, outcome)]) }
            return self.sendInOrder(rest, first: self.prepare(next)).map { [(first, outcome)] + $0 }
        }
    }

    /// The push made ready to leave (its payload, token or encryption).
    private func prepare(_ push: ChatStore.QueuedPush) -> PreparedPush {
        var notification = push.notification
        if notification.title.isEmpty { notification.title = PushWords.newMessage(lang: push.device.lang) }
        let expiry = push.createdAt.addingTimeInterval(Self.giveUpAfter)
        let device = push.device
        switch device.platform {
        case .apns:
            guard let apns else {
                return PreparedPush(.failed("APNs is not configured (HEREABOUTS_APNS_KEY_FILE, _KEY_ID, _TEAM_ID)"), on: http.anyLoop)
            }
            return apns.prepare(notification, to: device.address,
                                environment: APNsEnvironment(rawValue: device.environment ?? "") ?? .production,
                                topic: device.topic ?? "", expiration: expiry)
        case .webpush:
            guard settings.allowsEndpoint(device.address) else {
                return PreparedPush(.failed("the endpoint's host is not among HEREABOUTS_WEBPUSH_HOSTS"), on: http.anyLoop)
            }
            guard let p256dh = device.p256dh, let auth = device.authSecret,
                  let subscription = WebPushSubscription(endpoint: device.address, p256dh: Base64URL.encode(p256dh),
                                                         auth: Base64URL.encode(auth)) else {
                return PreparedPush(.gone("the subscription's keys are not valid"), on: http.anyLoop)
            }
            return webPush.prepare(notification, to: subscription, timeToLive: expiry.timeIntervalSinceNow)
        }
    }

    private func outcomes(of results: [(ChatStore.QueuedPush, PushOutcome)], lastError: inout String?) -> ChatStore.PushOutcomes {
        var outcomes = ChatStore.PushOutcomes()
        let now = Date()
        counters.withLock { counters in
            for (push, outcome) in results {
                switch outcome {
                case .delivered:
                    if let id = push.id { outcomes.finished.append(id) }
                    counters.sent += 1
                case .gone(let reason):
                    // A device's later pushes share its outcome: it is forgotten once.
                    guard !outcomes.goneDevices.contains(push.deviceId) else { continue }
                    outcomes.goneDevices.append(push.deviceId)
                    counters.removed += 1
                    logger.info("push device gone; forgotten", metadata: ["device": "\(push.deviceId)", "reason": "\(reason)"])
                case .retry(let reason, let after) where now.timeIntervalSince(push.createdAt) < Self.giveUpAfter:
                    let delay = max(after ?? 0, OutboxWake.backoff(afterAttempts: push.attempts + 1, first: retryDelay))
                    outcomes.retries.append((push, now.addingTimeInterval(delay), reason))
                    lastError = reason
                case .retry(let reason, _), .failed(let reason):
                    if let id = push.id { outcomes.finished.append(id) }
                    counters.failed += 1
                    lastError = reason
                    logger.warning("push given up", metadata: ["message": "\(push.notification.collapseId ?? "")", "device": "\(push.deviceId)", "reason": "\(reason)"])
                }
            }
        }
        return outcomes
    }
}

/// The words a push adds, in the device's language.
enum PushWords {
    static func newMessage(lang: String?) -> String {
        switch lang?.prefix(2).lowercased() {
        case "de": "Neue Nachricht"
        case "fr": "Nouveau message"
        case "es": "Mensaje nuevo"
        case "it": "Nuovo messaggio"
        case "nl": "Nieuw bericht"
        default: "New message"
        }
    }
}

extension Array {
    /// The array in pieces of at most `size`.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
