import Contracts
import Foundation
import Logging
import Synchronization
import Wire

/// A request as the front thread hands it over: the ROUTER's routing frames (and
/// the empty delimiter, when the peer sent one) and the request's own frames.
struct Incoming: Sendable {
    let routing: [Data]
    let frames: [Data]
    let receivedAt: Date
}

/// A request whose envelope, route and token have been checked, ready to run.
struct Job: Sendable {
    let incoming: Incoming
    let envelope: RequestEnvelope
    let route: Route
    let caller: Caller?
}

/// Turns a request's frames into its reply. Runs on any worker thread; `send`
/// passes reply frames (routing first) to that thread's socket towards the front.
final class RequestPipeline: Sendable {
    let service: String
    let router: Router
    let verifier: TokenVerifier?
    let authorize: (@Sendable (Caller) throws -> Void)?
    let database: ServiceDatabase?
    let logger: Logger
    let pools: [String: WorkQueue<Job>]
    let inFlight = InFlightRequests()
    /// Set when the service begins to stop: slow pools refuse work they have not begun.
    let isStopping = Atomic<Bool>(false)

    init(service: String, router: Router, verifier: TokenVerifier?, authorize: (@Sendable (Caller) throws -> Void)?,
         database: ServiceDatabase?, logger: Logger, pools: [String: WorkQueue<Job>]) {
        self.service = service
        self.router = router
        self.verifier = verifier
        self.authorize = authorize
        self.database = database
        self.logger = logger
        self.pools = pools
    }

    /// Checks a request as far as its token, then runs it here or queues it on its pool.
    func handle(_ incoming: Incoming, send: ([Data]) -> Void) {
        let envelope: RequestEnvelope
        do {
            envelope = try RequestEnvelope.decode(frames: incoming.frames)
        } catch {
            logger.debug("refused an unreadable request", metadata: ["error": "\(error.error)"])
            send(incoming.routing + [ReplyEnvelope.failure(id: error.requestID, error: error.error)])
            return
        }
        do {
            let (route, caller) = try admit(envelope)
            let job = Job(incoming: incoming, envelope: envelope, route: route, caller: caller)
            if let poolName = route.pool, let pool = pools[poolName] {
                guard pool.offer(job) else {
                    throw ServiceError.rateLimited("too many \(route.name) requests are waiting; try again shortly",
                                                   retryAfterMs: 1000)
                }
                return
            }
            execute(job, send: send)
        } catch {
            send(incoming.routing + [failureFrame(error, id: envelope.id, op: envelope.op)])
        }
    }

    /// Runs a checked request to its reply; for a state-changing op, once per id.
    func execute(_ job: Job, send: ([Data]) -> Void) {
        if job.route.pool != nil && isStopping.load(ordering: .relaxed) {
            let error = ServiceError.unavailable("the \(service) service is stopping; try again")
            send(job.incoming.routing + [ReplyEnvelope.failure(id: job.envelope.id, error: error)])
            return
        }
        let key = job.route.effect == .read ? nil
            : IdempotencyKey(op: job.route.name, requestID: job.envelope.id, caller: job.caller?.userID ?? "")
        if let key, !inFlight.beginOrPark(key, job) {
            return
        }
        send(job.incoming.routing + run(job))
        if let key {
            // Parked retries find the original's answer in the log now.
            for parked in inFlight.finish(key) {
                send(parked.incoming.routing + run(parked))
            }
        }
    }

    /// The reply frames of one request.
    private func run(_ job: Job) -> [Data] {
        let envelope = job.envelope
        var requestLogger = logger
        requestLogger[metadataKey: "request"] = "\(envelope.id)"
        requestLogger[metadataKey: "op"] = "\(envelope.op)"
        let context = RequestContext(requestID: envelope.id, op: envelope.op, caller: job.caller,
                                     attachments: envelope.attachments, receivedAt: job.incoming.receivedAt,
                                     logger: requestLogger, effect: job.route.effect, database: database)
        do {
            let output = try job.route.run(envelope, context)
            requestLogger.debug("ok", metadata: ["ms": "\(elapsedMilliseconds(since: job.incoming.receivedAt))"])
            return [output.frame0] + output.attachments
        } catch {
            let frame0 = failureFrame(error, id: envelope.id, op: envelope.op, logger: requestLogger)
            if let serviceError = error as? ServiceError, !serviceError.code.isTransient {
                do {
                    try context.keepFailure(frame0)
                } catch {
                    requestLogger.error("could not keep a failure reply", metadata: ["error": "\(error)"])
                }
            }
            return [frame0]
        }
    }

    /// Finds the op and checks what can be checked before the body: the op's frame
    /// limits, the token when one is sent, and the op's access rule.
    private func admit(_ envelope: RequestEnvelope) throws -> (Route, Caller?) {
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
        var caller: Caller?
        if let token = envelope.token {
            guard let verifier else { throw ServiceError.unauthenticated("this service does not accept tokens") }
            let verified = try verifier.verify(token)
            try authorize?(verified)
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
        return (route, caller)
    }

    /// The failure reply for any error: a `ServiceError` as it is, anything else
    /// logged and answered as `internal` with no detail.
    private func failureFrame(_ error: any Error, id: String, op: String, logger: Logger? = nil) -> Data {
        let logger = logger ?? self.logger
        if let serviceError = error as? ServiceError {
            if serviceError.code == .internal {
                logger.error("internal error", metadata: ["op": "\(op)", "error": "\(serviceError)"])
            } else {
                logger.debug("refused", metadata: ["op": "\(op)", "error": "\(serviceError)"])
            }
            return ReplyEnvelope.failure(id: id, error: serviceError)
        }
        logger.error("internal error", metadata: ["op": "\(op)", "error": "\(String(reflecting: error))"])
        return ReplyEnvelope.failure(id: id, error: .internal)
    }

    private func elapsedMilliseconds(since start: Date) -> String {
        String(format: "%.2f", Date().timeIntervalSince(start) * 1000)
    }
}
