import Contracts
import Foundation
import Synchronization
import Wire
import ZeroMQ

/// One DEALER socket to one endpoint, owned by a thread of its own, carrying every
/// caller's requests at once; replies are matched to their callers by request id.
/// Each request keeps the Lazy Pirate promise of `ServiceClient`: a try that gets no
/// reply within the timeout is sent again with the same id, so a write is applied
/// once; after the last try the caller gets `unavailable`. A reply to a try of a
/// request already answered is dropped. A DEALER reconnects by itself when the
/// service comes back, so no try needs a fresh socket.
final class DealerLink: Sendable {
    let configuration: ServiceClient.Configuration

    /// Requests sent and not yet answered, by request id.
    private let pending = PendingRequests()
    /// Where callers hand request ids to the socket's thread.
    private let inbox: Mutex<Socket?>
    private let thread: ServiceThread
    private static let stopSignal = Data([0])

    struct Pending {
        var frames: [Data]
        var triesLeft: Int
        /// The number of the try now waiting (0 until the first is sent): a deadline
        /// counts only against the try it was set for. An id comes back when a
        /// client retries after a lost answer, and the deadlines of its answered
        /// requests are still in the list.
        var currentTry: UInt64 = 0
        var continuation: CheckedContinuation<[Data], any Error>
    }

    /// Shared by the callers and the socket's thread.
    final class PendingRequests: Sendable {
        let byID = Mutex<[String: Pending]>([:])
    }

    /// Connects to `endpoint` (one of `configuration`'s replicas).
    init(_ configuration: ServiceClient.Configuration, endpoint: String) throws {
        self.configuration = configuration
        let inboxEndpoint = "inproc://async-client-\(configuration.service)-\(UUID().uuidString)"
        let bound = Mutex<Result<Void, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let pending = self.pending
        thread = ServiceThread(name: "client-\(configuration.service)") {
            let dealer: Socket, requests: Socket
            do {
                requests = try configuration.context.makeSocket(.pull)
                try requests.set(.linger(milliseconds: 0))
                try requests.set(.receiveHighWaterMark(messages: 0))
                try requests.bind(inboxEndpoint)
                dealer = try configuration.context.makeSocket(.dealer)
                try dealer.set(.linger(milliseconds: 0))
                try dealer.set(.maxMessageSize(bytes: Int64(Limits.messageBytes)))
                try dealer.set(.sendHighWaterMark(messages: 100_000))
                try dealer.set(.receiveHighWaterMark(messages: 100_000))
                try dealer.secure(configuration.curve)
                try dealer.connect(endpoint)
            } catch {
                bound.withLock { $0 = .failure(error) }
                ready.signal()
                return
            }
            bound.withLock { $0 = .success(()) }
            ready.signal()
            Self.run(dealer: dealer, requests: requests, pending: pending, timeout: configuration.timeout)
            dealer.close()
            requests.close()
        }
        ready.wait()
        if case .failure(let error) = bound.withLock({ $0! }) {
            thread.join()
            throw error
        }
        let push = try configuration.context.makeSocket(.push)
        try push.set(.linger(milliseconds: 0))
        try push.set(.sendHighWaterMark(messages: 0))
        try push.connect(inboxEndpoint)
        inbox = Mutex(push)
    }

    deinit { close() }

    /// Sends a request's frames (`frame0` and attachments) and returns its reply
    /// frames; throws `unavailable` when no try is answered.
    func send(_ frames: [Data], id requestID: String, tries: Int) async throws -> [Data] {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<[Data], any Error>) in
            // A second caller with an id in flight waits for its own reply: the service
            // answers both the same (the retry rule), and the first is kept apart.
            let admitted = pending.byID.withLock { pending -> Bool in
                guard pending[requestID] == nil else { return false }
                pending[requestID] = Pending(frames: [Data()] + frames, triesLeft: max(1, tries), continuation: continuation)
                return true
            }
            guard admitted else {
                continuation.resume(throwing: ServiceError.conflict("request id \"\(requestID)\" is in flight already"))
                return
            }
            let sent = inbox.withLock { socket -> Bool in
                guard let socket else { return false }
                return (try? socket.send(Data(requestID.utf8))) ?? false
            }
            if !sent, let dropped = pending.byID.withLock({ $0.removeValue(forKey: requestID) }) {
                dropped.continuation.resume(throwing: ServiceError.unavailable("the \(configuration.service) client is closed"))
            }
        }
    }

    /// Fails what is in flight with `unavailable` and closes the socket.
    func close() {
        let signalled = inbox.withLock { socket -> Bool in
            guard let push = socket else { return false }
            socket = nil
            let sent = (try? push.send(Self.stopSignal)) ?? false
            push.close()
            return sent
        }
        if signalled { thread.join() }
        let abandoned = pending.byID.withLock { pending -> [Pending] in
            let all = Array(pending.values)
            pending.removeAll()
            return all
        }
        for request in abandoned {
            request.continuation.resume(throwing: ServiceError.unavailable("the \(configuration.service) client closed"))
        }
    }

    // MARK: The socket's thread

    private static func run(dealer: Socket, requests: Socket, pending: PendingRequests, timeout: TimeInterval) {
        var poller = Poller()
        let requestsIndex = poller.addReadable(requests)
        let repliesIndex = poller.addReadable(dealer)
        // Every try waits the same time, so tries time out in the order they were sent.
        var deadlines: [(at: Double, id: String, try: UInt64)] = []
        var nextDeadline = 0
        var tries: UInt64 = 0
        /// Marks the request's next try as sent now and sets its deadline.
        func sending(_ id: String, _ request: inout Pending, now: Double) {
            tries += 1
            request.currentTry = tries
            deadlines.append((now + timeout, id, tries))
        }
        let replyLimits = MessageLimits(maxFrames: 2 + Limits.requestFrames, maxBytes: Limits.messageBytes + 1024)
        while true {
            let now = ProcessInfo.processInfo.systemUptime
            // Tries whose time is up: sent again while tries are left, else failed.
            while nextDeadline < deadlines.count, deadlines[nextDeadline].at <= now {
                let (_, id, expired) = deadlines[nextDeadline]
                nextDeadline += 1
                let retry = pending.byID.withLock { pending -> [Data]? in
                    guard var request = pending[id], request.currentTry == expired else { return nil }
                    request.triesLeft -= 1
                    if request.triesLeft > 0 {
                        sending(id, &request, now: now)
                        pending[id] = request
                        return request.frames
                    }
                    pending[id] = nil
                    request.continuation.resume(throwing: ServiceError.unavailable(
                        "the service did not answer", detail: "\(request.frames.count) frames, every try timed out"))
                    return nil
                }
                if let retry {
                    // A send that would block counts as a try that timed out too.
                    _ = try? dealer.send(retry, wait: false)
                }
            }
            if nextDeadline > 4_096 {
                deadlines.removeFirst(nextDeadline)
                nextDeadline = 0
            }
            let wait = nextDeadline < deadlines.count ? max(0, Int((deadlines[nextDeadline].at - now) * 1000) + 1) : 1_000
            do {
                try poller.poll(timeout: wait)
                if poller.isReadable(requestsIndex) {
                    while let message = try requests.receiveMessage(wait: false) {
                        if message == [stopSignal] { return }
                        let id = String(decoding: message[0], as: UTF8.self)
                        let frames = pending.byID.withLock { pending -> [Data]? in
                            guard var request = pending[id] else { return nil }
                            sending(id, &request, now: ProcessInfo.processInfo.systemUptime)
                            pending[id] = request
                            return request.frames
                        }
                        guard let frames else { continue }
                        // A send that would block counts as a try that timed out.
                        _ = try dealer.send(frames, wait: false)
                    }
                }
                if poller.isReadable(repliesIndex) {
                    while let reply = try dealer.receive(wait: false, limits: replyLimits) {
                        // The empty delimiter first, as a REQ socket would get it.
                        let frames = reply.frames.first?.isEmpty == true ? Array(reply.frames.dropFirst()) : reply.frames
                        guard let frame0 = frames.first, let id = ReplyEnvelope.requestID(of: frame0) else { continue }
                        pending.byID.withLock { $0.removeValue(forKey: id) }?.continuation.resume(returning: frames)
                    }
                }
            } catch {
                if error.isContextTerminated { return }
            }
        }
    }
}
