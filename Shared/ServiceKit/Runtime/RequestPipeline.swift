import Contracts
import Foundation
import Logging
import Synchronization
import Wire

/// A request as it arrives: the ROUTER's routing frames (and the empty delimiter,
/// when the peer sent one), then the request's own frames.
struct Incoming: Sendable {
    let message: [Data]
    /// Where the request's own frames begin.
    let bodyStart: Int
    let receivedAt: Date
    /// The ZAP user id (Z85 public key) the peer was admitted with; nil in plaintext.
    let peerKey: String?
    /// Frames past the server's limits were dropped unread.
    let truncated: Bool

    var frames: ArraySlice<Data> { message[bodyStart...] }

    /// The reply frames: this request's routing frames, then `frame0` and `attachments`.
    func reply(_ frame0: Data, attachments: [Data] = []) -> [Data] {
        var reply = [Data]()
        reply.reserveCapacity(bodyStart + 1 + attachments.count)
        reply.append(contentsOf: message[..<bodyStart])
        reply.append(frame0)
        reply.append(contentsOf: attachments)
        return reply
    }
}

/// A request whose envelope was read and whose op was found.
struct Job: Sendable {
    enum Admission: Sendable {
        /// The token and access rules are still to be checked.
        case pending
        /// Checked: the token's caller, or nil when none was sent.
        case admitted(Caller?)
    }

    let incoming: Incoming
    let envelope: RequestEnvelope
    let route: Route
    var admission: Admission
    /// Set once a call was taken from the caller's bucket, so a request the front
    /// thread passes on is not counted twice.
    var rateChecked = false

    var caller: Caller? {
        if case .admitted(let caller) = admission { return caller }
        return nil
    }
}

/// A further check of a verified caller: a revoked session, a deleted user.
public struct CallerCheck: Sendable {
    public let check: @Sendable (Caller) throws -> Void
    /// A check that reads the database never runs on the front thread.
    public let readsDatabase: Bool

    public init(readsDatabase: Bool, _ check: @escaping @Sendable (Caller) throws -> Void) {
        self.check = check
        self.readsDatabase = readsDatabase
    }
}

/// Turns requests into replies, in three stages that run on different threads:
/// `receive` on the front thread (read the envelope, find the op, answer front-lane
/// ops at once), `work` on a worker (check the token, run the op or queue it on its
/// pool), and `execute` wherever the op runs. `send` passes reply frames (routing
/// first) on towards the client.
final class RequestPipeline: Sendable {
    enum Received {
        /// Answered on the spot.
        case answered([Data])
        /// For the workers.
        case dispatched(Job)
    }

    let service: String
    let router: Router
    let verifier: TokenVerifier?
    let callerCheck: CallerCheck?
    let security: ServerSecurity?
    let database: ServiceDatabase?
    let logger: Logger
    /// Slow work's queues, fair across the requests' origins.
    let pools: [String: FairQueue<Job>]
    let rateLimiter: RateLimiter?
    let inFlight = InFlightRequests()
    /// Set when the service begins to stop: pools refuse work they have not begun.
    let isStopping = Atomic<Bool>(false)

    init(service: String, router: Router, verifier: TokenVerifier?, callerCheck: CallerCheck?, security: ServerSecurity?,
         database: ServiceDatabase?, logger: Logger, pools: [String: FairQueue<Job>], rateLimiter: RateLimiter?) {
        self.rateLimiter = rateLimiter
        self.security = security
        self.service = service
        self.router = router
        self.verifier = verifier
        self.callerCheck = callerCheck
        self.database = database
        self.logger = logger
        self.pools = pools
    }

    /// On the front thread: reads the envelope and finds the op; answers bad
    /// requests and front-lane ops at once, and hands the rest to the workers.
    func receive(_ incoming: Incoming) -> Received {
        if incoming.truncated {
            let error = ServiceError.tooLarge("a request may have at most \(Limits.requestFrames) frames and \(Limits.messageBytes) bytes in all")
            return .answered(incoming.reply(ReplyEnvelope.failure(id: "", error: error)))
        }
        let envelope: RequestEnvelope
        do {
            envelope = try RequestEnvelope.decode(frames: incoming.frames)
        } catch {
            logger.debug("refused an unreadable request", metadata: ["error": "\(error.error)"])
            return .answered(incoming.reply(ReplyEnvelope.failure(id: error.requestID, error: error.error)))
        }
        let route: Route
        do {
            route = try findRoute(envelope)
        } catch {
            return .answered(incoming.reply(failureFrame(error, id: envelope.id, op: envelope.op)))
        }
        var job = Job(incoming: incoming, envelope: envelope, route: route, admission: .pending)
        guard route.lane == .front else { return .dispatched(job) }
        do {
            job.admission = .admitted(try admit(envelope, route, peer: role(of: incoming), mayWait: false))
        } catch is MustWait {
            return .dispatched(job)
        } catch {
            return .answered(incoming.reply(failureFrame(error, id: envelope.id, op: envelope.op)))
        }
        if let refusal = overRate(job) { return .answered(incoming.reply(refusal)) }
        job.rateChecked = true
        guard let frames = attempt(job, mayWait: false) else { return .dispatched(job) }
        return .answered(frames)
    }

    /// The `rate_limited` reply when the client's address or an admitted caller is
    /// over the op's limit; nil when it may go on (and one call is taken from each bucket).
    private func overRate(_ job: Job) -> Data? {
        if let limit = job.route.addressLimit, let address = relayedAddress(of: job), let wait = limit.limiter.take(address) {
            return ReplyEnvelope.failure(id: job.envelope.id,
                                         error: .rateLimited(limit.refusal, retryAfterMs: Int((wait * 1000).rounded(.up))))
        }
        guard let rate = job.route.rate, let caller = job.caller else { return nil }
        let limiter: RateLimiter?, message: String
        switch rate {
        case .callerWrites:
            (limiter, message) = (rateLimiter, "too many writes; slow down")
        case .own(let own):
            (limiter, message) = (own, "too many \(job.route.name) requests; slow down")
        }
        guard let wait = limiter?.take(caller.userID) else { return nil }
        return ReplyEnvelope.failure(id: job.envelope.id,
                                     error: .rateLimited(message, retryAfterMs: Int((wait * 1000).rounded(.up))))
    }

    /// On a worker: checks the token and access rules unless the front did, then
    /// runs the op here or queues it on its pool (unless `usePools` is false, when
    /// a caller answers in process with no pool threads running).
    func work(_ job: Job, usePools: Bool = true, send: ([Data]) -> Void) {
        var job = job
        if case .pending = job.admission {
            do {
                job.admission = .admitted(try admit(job.envelope, job.route, peer: role(of: job.incoming), mayWait: true))
            } catch {
                send(job.incoming.reply(failureFrame(error, id: job.envelope.id, op: job.envelope.op)))
                return
            }
        }
        if !job.rateChecked, let refusal = overRate(job) {
            send(job.incoming.reply(refusal))
            return
        }
        if usePools, case .pool(let name) = job.route.lane, let pool = pools[name] {
            guard pool.offer(job, key: origin(of: job)) else {
                let error = ServiceError.rateLimited("too many \(job.route.name) requests are waiting; try again shortly",
                                                     retryAfterMs: 1000)
                send(job.incoming.reply(ReplyEnvelope.failure(id: job.envelope.id, error: error)))
                return
            }
            return
        }
        execute(job, send: send)
    }

    /// Runs an admitted request to its reply; for a state-changing op, once per id.
    func execute(_ job: Job, send: ([Data]) -> Void) {
        if case .pool = job.route.lane, isStopping.load(ordering: .relaxed) {
            let error = ServiceError.unavailable("the \(service) service is stopping; try again")
            send(job.incoming.reply(ReplyEnvelope.failure(id: job.envelope.id, error: error)))
            return
        }
        let key = job.route.effect == .read || job.route.effect == .fresh ? nil
            : IdempotencyKey(op: job.route.name, requestID: job.envelope.id, caller: job.caller?.userID ?? "")
        if let key, !inFlight.beginOrPark(key, job) {
            return
        }
        if key != nil { database?.groupCommit.begin() }
        let reply = run(job)
        if key != nil { database?.groupCommit.end() }
        send(reply)
        if let key {
            // Parked retries find the original's answer in the log now.
            for parked in inFlight.finish(key) {
                send(run(parked))
            }
        }
    }

    /// The reply frames of one request, on a thread that may wait.
    private func run(_ job: Job) -> [Data] {
        // Only a thread that may not wait is ever asked to defer.
        attempt(job, mayWait: true) ?? job.incoming.reply(failureFrame(ServiceError.internal, id: job.envelope.id, op: job.envelope.op))
    }

    /// The reply frames of one request, routing frames first; nil when a handler on
    /// the front thread asked to run where it may wait.
    private func attempt(_ job: Job, mayWait: Bool) -> [Data]? {
        let envelope = job.envelope
        let context = RequestContext(requestID: envelope.id, op: envelope.op, caller: job.caller, origin: origin(of: job),
                                     attachments: envelope.attachments, receivedAt: job.incoming.receivedAt,
                                     logger: logger, effect: job.route.effect, database: database, mayWait: mayWait)
        do {
            let output = try job.route.run(envelope, context)
            logger.debug("ok", metadata: [
                "request": "\(envelope.id)", "op": "\(envelope.op)",
                "ms": "\(elapsedMilliseconds(since: job.incoming.receivedAt))",
            ])
            return job.incoming.reply(output.frame0, attachments: output.attachments)
        } catch is RequestContext.Deferred where !mayWait {
            return nil
        } catch {
            var frame0 = failureFrame(error, id: envelope.id, op: envelope.op)
            if let serviceError = error as? ServiceError, !serviceError.code.isTransient {
                do {
                    frame0 = try context.answerFailure(frame0)
                } catch {
                    logger.error("could not keep a failure reply", metadata: ["request": "\(envelope.id)", "error": "\(error)"])
                }
            }
            return job.incoming.reply(frame0)
        }
    }

    /// Finds the op and checks its frame limits.
    private func findRoute(_ envelope: RequestEnvelope) throws -> Route {
        guard let route = router.route(envelope.op) else { throw ServiceError.unknownOp(envelope.op) }
        guard envelope.frame0Bytes <= route.maxFrame0Bytes else {
            throw ServiceError.tooLarge("frame 0 is \(envelope.frame0Bytes) bytes, over the limit of \(route.maxFrame0Bytes) for \(route.name)")
        }
        guard envelope.totalBytes <= Limits.messageBytes else {
            throw ServiceError.tooLarge("the message is \(envelope.totalBytes) bytes, over the limit of \(Limits.messageBytes)")
        }
        guard envelope.attachments.count <= route.maxAttachments else {
            throw ServiceError.badRequest("\(route.name) takes \(route.maxAttachments) frame(s) after frame 0, not \(envelope.attachments.count)")
        }
        return route
    }

    /// Thrown by `admit` on the front thread when admission would wait for IO.
    private struct MustWait: Error {}

    /// What the peer that sent a request may do: plaintext binds only where nothing but
    /// this machine reaches, so there every peer is trusted as a service.
    private func role(of incoming: Incoming) -> PeerRole {
        security?.role(ofPeerKey: incoming.peerKey) ?? .service
    }

    /// Whom a request comes from, for budgets kept per origin (failed logins): the
    /// end client's address a service (the edge) relays in `origin`, else the peer's
    /// key, else this machine.
    private func origin(of job: Job) -> String {
        relayedAddress(of: job) ?? job.incoming.peerKey.map { "key:\($0)" } ?? "local"
    }

    /// The end client's address a service relays in `origin`, as budgets count it
    /// (an IPv6 client by its /64); nil when no service relays one.
    private func relayedAddress(of job: Job) -> String? {
        guard role(of: job.incoming) == .service, let origin = job.envelope.origin else { return nil }
        return ClientAddress.budgetKey(origin)
    }

    /// Checks the token when one is sent, and the op's access rule.
    private func admit(_ envelope: RequestEnvelope, _ route: Route, peer: PeerRole, mayWait: Bool) throws -> Caller? {
        switch route.onlyFor {
        case .service? where peer != .service:
            throw ServiceError.permissionDenied("\(route.name) is for the services only")
        case .operator? where peer != .operator && security != nil:
            throw ServiceError.permissionDenied("\(route.name) is for the operator's here only")
        default:
            break
        }
        var caller: Caller?
        if let token = envelope.token {
            guard let verifier else { throw ServiceError.unauthenticated("this service does not accept tokens") }
            if let callerCheck, callerCheck.readsDatabase, !mayWait { throw MustWait() }
            let verified: Caller
            do {
                verified = try verifier.verify(token, mayFetch: mayWait)
            } catch is TokenVerifier.KeysNotLoaded {
                throw MustWait()
            }
            try callerCheck?.check(verified)
            caller = verified
        }
        switch route.access {
        case .anyone:
            break
        case .user:
            guard caller != nil else { throw ServiceError.unauthenticated("\(route.name) needs an access token") }
        case .registered:
            guard let caller else { throw ServiceError.unauthenticated("\(route.name) needs an access token") }
            guard !caller.anonymous else {
                throw ServiceError.permissionDenied("\(route.name) needs a registered account; anonymous users may upgrade")
            }
        }
        if let confirmed = route.confirmedEmails, let caller, !caller.anonymous, !confirmed.contains(caller.userID) {
            throw ConfirmedEmails.refusal
        }
        return caller
    }

    /// The failure reply for any error: a `ServiceError` as it is (its `detail` only
    /// in the log), an `internal` one and anything else logged and answered as
    /// `internal` with no detail.
    private func failureFrame(_ error: any Error, id: String, op: String) -> Data {
        if let serviceError = error as? ServiceError {
            switch serviceError.code {
            case .internal:
                logger.error("internal error", metadata: ["request": "\(id)", "op": "\(op)", "error": "\(serviceError)"])
                return ReplyEnvelope.failure(id: id, error: .internal)
            case .unavailable:
                logger.warning("unavailable", metadata: ["request": "\(id)", "op": "\(op)", "error": "\(serviceError)"])
            default:
                logger.debug("refused", metadata: ["request": "\(id)", "op": "\(op)", "error": "\(serviceError)"])
            }
            return ReplyEnvelope.failure(id: id, error: serviceError)
        }
        if let full = StorageSpace.fullError(error, service: service) {
            return failureFrame(full, id: id, op: op)
        }
        logger.error("internal error", metadata: ["request": "\(id)", "op": "\(op)", "error": "\(String(reflecting: error))"])
        return ReplyEnvelope.failure(id: id, error: .internal)
    }

    private func elapsedMilliseconds(since start: Date) -> String {
        String(format: "%.2f", Date().timeIntervalSince(start) * 1000)
    }
}
