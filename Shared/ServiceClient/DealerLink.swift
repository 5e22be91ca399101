import Contracts
import Foundation
import Synchronization
import Wire
import ZeroMQ

/// One DEALER socket to one endpoint, carrying every caller's requests at once;
/// replies are matched to their callers by request id. Each request keeps the Lazy
/// Pirate promise of `ServiceClient`: a try that gets no reply within the timeout is
/// sent again with the same id, so a write is applied once; after the last try the
/// caller gets `unavailable`. A reply to a try of a request already answered is
/// dropped. A DEALER reconnects by itself when the service comes back, so no try
/// needs a fresh socket.
///
/// The socket is shared under a lock: a caller sends its request on its own thread
/// (an edge's event loop), so a request costs no hand-over to another thread. A
/// thread of the link's own waits on the socket's file descriptor for replies and
/// on the clock for tries that time out. libzmq allows a socket to move between
/// threads behind a full memory barrier, which the lock is; its descriptor signals
/// edge-wise, so whoever holds the lock looks for replies before letting go of it
/// after a send (`Link.sendTry`), or a reply that came meanwhile would wait unseen.
final class DealerLink: RequestLink {
    let configuration: ServiceClient.Configuration
    private let link: Link
    private let thread: ServiceThread

    struct Pending {
        var frames: [Data]
        var triesLeft: Int
        /// The number of the try now waiting (0 until the first is sent): a deadline
        /// counts only against the try it was set for. An id comes back when a
        /// client retries after a lost answer, and the deadlines of its answered
        /// requests are still in the list.
        var currentTry: UInt64 = 0
        var then: Completion
    }

    /// A caller to give its answer, once the lock is let go.
    private struct Resumption {
        var then: Completion
        var result: Result<[Data], any Error>
        func resume() { then(result) }
    }

    /// What the lock guards: the socket, the requests in flight and their deadlines.
    private struct State {
        var dealer: Socket?
        var isClosing = false
        /// Requests sent and not yet answered, by request id.
        var pending: [String: Pending] = [:]
        /// Every try waits the same time, so tries time out in the order they were sent.
        var deadlines: [(at: Double, id: String, try: UInt64)] = []
        var nextDeadline = 0
        var tries: UInt64 = 0
    }

    /// The shared part, held by callers and the link's thread.
    private final class Link: Sendable {
        let state: Mutex<State>
        let timeout: TimeInterval
        /// Signalled by `close`, waking the link's thread for good.
        let stopPipe: WakePipe
        let descriptor: Int32
        static let replyLimits = MessageLimits(maxFrames: 2 + Limits.requestFrames, maxBytes: Limits.messageBytes + 1024)

        init(dealer: sending Socket, timeout: TimeInterval) throws {
            self.timeout = timeout
            descriptor = dealer.fileDescriptor
            stopPipe = try WakePipe()
            state = Mutex(State(dealer: dealer))
        }

        /// Sends the request's next try now and sets its deadline; a send that would
        /// block counts as a try that timed out. Then takes the replies that are in,
        /// as the send may have taken their signal off the descriptor.
        static func sendTry(_ id: String, in state: inout State, timeout: TimeInterval, now: Double,
                            resuming: inout [Resumption]) {
            guard var request = state.pending[id], let dealer = state.dealer else { return }
            state.tries += 1
            request.currentTry = state.tries
            state.pending[id] = request
            state.deadlines.append((now + timeout, id, state.tries))
            do {
                _ = try dealer.send(request.frames, wait: false)
                if dealer.hasInput { try takeReplies(in: &state, resuming: &resuming) }
            } catch {
                // Context terminated: `close` fails what is left.
            }
        }

        /// Every reply waiting on the socket, matched to its caller.
        static func takeReplies(in state: inout State, resuming: inout [Resumption]) throws(ZMQError) {
            guard let dealer = state.dealer else { return }
            while let reply = try dealer.receive(wait: false, limits: replyLimits) {
                // The empty delimiter first, as a REQ socket would get it.
                let frames = reply.frames.first?.isEmpty == true ? Array(reply.frames.dropFirst()) : reply.frames
                guard let frame0 = frames.first, let id = ReplyEnvelope.requestID(of: frame0),
                      let request = state.pending.removeValue(forKey: id) else { continue }
                resuming.append(Resumption(then: request.then, result: .success(frames)))
            }
        }

        /// Tries whose time is up: sent again while tries are left, else failed.
        static func expire(in state: inout State, timeout: TimeInterval, now: Double, resuming: inout [Resumption]) {
            while state.nextDeadline < state.deadlines.count, state.deadlines[state.nextDeadline].at <= now {
                let (_, id, expired) = state.deadlines[state.nextDeadline]
                state.nextDeadline += 1
                guard var request = state.pending[id], request.currentTry == expired else { continue }
                request.triesLeft -= 1
                if request.triesLeft > 0 {
                    state.pending[id] = request
                    sendTry(id, in: &state, timeout: timeout, now: now, resuming: &resuming)
                } else {
                    state.pending[id] = nil
                    resuming.append(Resumption(then: request.then, result: .failure(ServiceError.unavailable(
                        "the service did not answer", detail: "\(request.frames.count) frames, every try timed out"))))
                }
            }
            if state.nextDeadline > 4_096 {
                state.deadlines.removeFirst(state.nextDeadline)
                state.nextDeadline = 0
            }
        }

        /// The link's thread: replies and timeouts, until `close`.
        func run() {
            var poller = Poller()
            poller.addReadable(descriptor: descriptor)
            let stopIndex = poller.addReadable(descriptor: stopPipe.readEnd)
            let timeout = self.timeout
            while true {
                var resuming: [Resumption] = []
                let wait = state.withLock { state -> Int? in
                    guard !state.isClosing else { return nil }
                    let now = ProcessInfo.processInfo.systemUptime
                    Self.expire(in: &state, timeout: timeout, now: now, resuming: &resuming)
                    do {
                        try Self.takeReplies(in: &state, resuming: &resuming)
                    } catch let error as ZMQError where error.isContextTerminated {
                        return nil
                    } catch {}
                    // A request sent while this thread waits has a deadline a full
                    // timeout away, so the wait never passes one.
                    guard state.nextDeadline < state.deadlines.count else { return min(1_000, Int(timeout * 1000) + 1) }
                    return max(0, Int((state.deadlines[state.nextDeadline].at - now) * 1000) + 1)
                }
                resuming.forEach { $0.resume() }
                guard let wait else { return }
                _ = try? poller.poll(timeout: wait)
                if poller.isReadable(stopIndex) { return }
            }
        }
    }

    /// Connects to `endpoint` (one of `configuration`'s replicas).
    init(_ configuration: ServiceClient.Configuration, endpoint: String) throws {
        self.configuration = configuration
        let dealer = try configuration.context.makeSocket(.dealer)
        try dealer.set(.linger(milliseconds: 0))
        try dealer.set(.maxMessageSize(bytes: Int64(Limits.messageBytes)))
        try dealer.set(.sendHighWaterMark(messages: 100_000))
        try dealer.set(.receiveHighWaterMark(messages: 100_000))
        try dealer.secure(configuration.curve)
        try dealer.connect(endpoint)
        let link = try Link(dealer: dealer, timeout: configuration.timeout)
        self.link = link
        thread = ServiceThread(name: "client-\(configuration.service)") { link.run() }
    }

    deinit { close() }

    /// Sends a request's frames (`frame0` and attachments); `then` gets its reply
    /// frames, or `unavailable` when no try is answered, on the thread that took the
    /// reply (the link's, or the caller's own when the reply was in already).
    func send(_ frames: [Data], id requestID: String, tries: Int, then: @escaping Completion) {
        var resuming: [Resumption] = []
        let refusal = link.state.withLock { state -> ServiceError? in
            guard !state.isClosing else { return .unavailable("the \(configuration.service) client is closed") }
            // A second caller with an id in flight waits for its own reply: the service
            // answers both the same (the retry rule), and the first is kept apart.
            guard state.pending[requestID] == nil else { return .conflict("request id \"\(requestID)\" is in flight already") }
            state.pending[requestID] = Pending(frames: [Data()] + frames, triesLeft: max(1, tries), then: then)
            Link.sendTry(requestID, in: &state, timeout: link.timeout, now: ProcessInfo.processInfo.systemUptime,
                         resuming: &resuming)
            return nil
        }
        if let refusal { then(.failure(refusal)) }
        resuming.forEach { $0.resume() }
    }

    /// Fails what is in flight with `unavailable` and closes the socket.
    func close() {
        let abandoned = link.state.withLock { state -> [Pending]? in
            guard !state.isClosing else { return nil }
            state.isClosing = true
            let all = Array(state.pending.values)
            state.pending.removeAll()
            return all
        }
        guard let abandoned else { return }
        link.stopPipe.signal()
        thread.join()
        // Only now: the thread no longer waits on the socket's descriptor.
        link.state.withLock { state in
            state.dealer?.close()
            state.dealer = nil
        }
        for request in abandoned {
            request.then(.failure(ServiceError.unavailable("the \(configuration.service) client closed")))
        }
    }
}
