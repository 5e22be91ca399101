import Contracts
import Crypto
import Foundation
import GRDB
import Wire

/// The ops a service answers, each bound to a plain synchronous handler.
///
/// A handler gets the decoded, validated body and a `RequestContext`, and returns
/// the reply body or throws a `ServiceError`. Handlers of state-changing ops return
/// the result of `context.commit`, which keeps the reply in the same transaction as
/// the change, so a retried request id is answered and never applied twice.
public struct Router: Sendable {
    public let service: String
    private(set) var routes: [String: Route] = [:]

    public init(service: String) {
        self.service = service
    }

    /// An op that changes nothing. With `limit`, each caller gets a token bucket of
    /// its own for this op (ops whose answers reveal others: users near, lookups);
    /// `limiter` instead shares the buckets with whatever else takes from it.
    public mutating func read<Request: ValidatedBody, Response>(
        _ op: Op<Request, Response>, lane: Lane = .workers, limit: RateLimiter.Policy? = nil, limiter: RateLimiter? = nil,
        _ handler: @escaping @Sendable (Request, RequestContext) throws -> Response
    ) {
        add(op, lane: lane, rate: (limiter ?? limit.map { RateLimiter(policy: $0) }).map { .own($0) }) { envelope, context in
            let body = try Self.decode(Request.self, envelope)
            let value = try handler(body, context)
            return HandlerOutput(frame0: try context.successFrame(value))
        }
    }

    /// An op that changes nothing and answers with binary frames after frame 0.
    public mutating func readWithAttachments<Request: ValidatedBody, Response>(
        _ op: Op<Request, Response>, lane: Lane = .workers,
        _ handler: @escaping @Sendable (Request, RequestContext) throws -> Reply<Response>
    ) {
        add(op, lane: lane) { envelope, context in
            let body = try Self.decode(Request.self, envelope)
            let reply = try handler(body, context)
            return HandlerOutput(frame0: try context.successFrame(reply.value), attachments: reply.attachments)
        }
    }

    /// An op that changes nothing whose reply body is already JSON (hot paths, feeds).
    public mutating func readRaw<Request: ValidatedBody, Response>(
        _ op: Op<Request, Response>, lane: Lane = .workers,
        _ handler: @escaping @Sendable (Request, RequestContext) throws -> RawJSON
    ) {
        add(op, lane: lane) { envelope, context in
            let body = try Self.decode(Request.self, envelope)
            let raw = try handler(body, context)
            return HandlerOutput(frame0: ReplyEnvelope.success(id: context.requestID, rawBody: raw.bytes))
        }
    }

    /// A state-changing op: the reply is kept for retries of the same request id.
    /// `rateLimited` ops count against the caller's writes per second.
    public mutating func write<Request: ValidatedBody, Response>(
        _ op: Op<Request, Response>, lane: Lane = .workers, rateLimited: Bool = false,
        _ handler: @escaping @Sendable (Request, RequestContext) throws -> Committed<Response>
    ) {
        precondition(op.effect == .write, "\(op.name) is not declared as a write")
        add(op, lane: lane, rate: rateLimited ? .callerWrites : nil) { envelope, context in
            let body = try Self.decode(Request.self, envelope)
            // The kept answer to a retry is looked up inside the commit's transaction.
            try context.beginWrite(fingerprint: Self.fingerprint(body, envelope))
            return HandlerOutput(frame0: try handler(body, context).frame0)
        }
    }

    /// A state-changing op whose reply carries tokens, which are never stored. The
    /// handler commits with `commitSession`, keeping `State` (which session); a retry
    /// is answered by `replay` with that state, issuing fresh tokens.
    public mutating func sessionWrite<Request: ValidatedBody, Response, State: Codable & Sendable>(
        _ op: Op<Request, Response>, lane: Lane = .workers, state: State.Type,
        handle: @escaping @Sendable (Request, RequestContext) throws -> Committed<Response>,
        replay: @escaping @Sendable (State, Request, RequestContext) throws -> Response
    ) {
        precondition(op.effect == .sessionWrite, "\(op.name) is not declared as a session write")
        add(op, lane: lane) { envelope, context in
            let body = try Self.decode(Request.self, envelope)
            try context.beginWrite(fingerprint: Self.fingerprint(body, envelope))
            switch try context.keptAnswer() {
            case .reply(let frame0)?:
                return HandlerOutput(frame0: frame0)
            case .session(let data)?:
                let state = try JSONValueDecoder().decode(State.self, from: data)
                return HandlerOutput(frame0: try context.successFrame(try replay(state, body, context)))
            case nil:
                return HandlerOutput(frame0: try handle(body, context).frame0)
            }
        }
    }

    /// A state-changing op that keeps nothing: every request runs, a retried id
    /// included (`Effect.fresh`). The handler commits with `commitSession` or `commit`.
    public mutating func freshWrite<Request: ValidatedBody, Response>(
        _ op: Op<Request, Response>, lane: Lane = .workers,
        _ handler: @escaping @Sendable (Request, RequestContext) throws -> Committed<Response>
    ) {
        precondition(op.effect == .fresh, "\(op.name) is not declared as fresh")
        add(op, lane: lane) { envelope, context in
            HandlerOutput(frame0: try handler(try Self.decode(Request.self, envelope), context).frame0)
        }
    }

    /// Serves `<service>.changes` from the service's outbox.
    /// Only services may read it: a feed holds every entity, private parts included
    /// (auth's holds discoverable homes).
    public mutating func changes<Change>(
        _ op: Op<ChangesRequest, ChangesReply<Change>>, outbox: ChangeOutbox, database: ServiceDatabase
    ) {
        readRaw(op) { request, _ in
            try database.pool.read { db in
                try outbox.changesReply(after: request.after, limit: request.limit, in: db)
            }
        }
        routes[op.name]?.onlyFor = .service
    }

    /// Counts `op` against `limit` by the client's address, besides any limit it has
    /// per caller. Ops that share one `AddressLimit` share its budget.
    public mutating func limitByAddress<Request, Response>(_ op: Op<Request, Response>, _ limit: AddressLimit) {
        precondition(routes[op.name] != nil, "\(op.name) is limited before it is registered")
        routes[op.name]?.addressLimit = limit
    }

    /// Refuses `op` to every peer but the operator's `here` (its key is the only
    /// operator key): ops that copy a file to disk, or make an account an operator.
    public mutating func operatorsOnly<Request, Response>(_ op: Op<Request, Response>) {
        precondition(routes[op.name] != nil, "\(op.name) is restricted before it is registered")
        routes[op.name]?.onlyFor = .operator
    }

    /// Refuses `op` to registered callers whose address is not in `confirmed`
    /// (`ServiceBase.requireConfirmedEmail`).
    mutating func requireConfirmedEmail(_ op: String, _ confirmed: ConfirmedEmails) {
        precondition(routes[op] != nil, "\(op) needs a confirmed address before it is registered")
        routes[op]?.confirmedEmails = confirmed
    }

    func route(_ name: String) -> Route? { routes[name] }
    var allRoutes: Dictionary<String, Route>.Values { routes.values }

    private mutating func add<Request, Response>(
        _ op: Op<Request, Response>, lane: Lane, rate: RateLimit? = nil,
        run: @escaping @Sendable (RequestEnvelope, RequestContext) throws -> HandlerOutput
    ) {
        precondition(rate == nil || op.access != .anyone, "\(op.name) is limited per caller, so it needs a token")
        precondition(op.service == service, "\(op.name) does not belong to the \(service) service")
        precondition(routes[op.name] == nil, "\(op.name) is registered twice")
        precondition(lane != .front || op.effect == .read, "\(op.name) changes state and cannot run on the front thread")
        routes[op.name] = Route(name: op.name, access: op.access, effect: op.effect,
                                maxAttachments: op.maxAttachments, maxFrame0Bytes: op.maxFrame0Bytes,
                                lane: lane, rate: rate, run: run)
    }

    private static func decode<Request: ValidatedBody>(_ type: Request.Type, _ envelope: RequestEnvelope) throws -> Request {
        try envelope.decodeBody(Request.self).validated()
    }

    /// What identifies a request's content for idempotency: its body as sent, in
    /// canonical form (keys sorted), and its attachments. A body that holds a
    /// password is fingerprinted without it, from the decoded request, so that the
    /// secret is never hashed into the kept log.
    static func fingerprint<Request: ValidatedBody>(_ body: Request, _ envelope: RequestEnvelope) throws -> Data {
        var hash = SHA256()
        if let secretless = (body as? any HoldsSecrets)?.withoutSecrets as? Request {
            hash.update(data: try JSONValueEncoder().encodeData(secretless, sortsKeys: true))
        } else {
            hash.update(data: JSONWriter.data(.object(envelope.body), sortsKeys: true))
        }
        for attachment in envelope.attachments {
            hash.update(data: Data(SHA256.hash(data: attachment)))
        }
        return Data(hash.finalize())
    }
}

/// Which threads run an op.
public enum Lane: Sendable, Equatable {
    /// The thread that owns the socket answers at once, with no hand-over: for
    /// reads from memory that take microseconds (`health`, cached profiles, an
    /// in-memory index). It must never wait for IO. A request that would need IO
    /// to be admitted (fetching auth's keys, a caller check that reads the
    /// database) goes to the workers instead.
    case front
    /// The service's worker threads, which take requests from one queue: for work
    /// that touches the database.
    case workers
    /// A named pool of its own, for slow work (password hashing).
    case pool(String)
}

/// One registered op, with its protocol rules and its type-erased handler.
struct Route: Sendable {
    let name: String
    let access: Access
    let effect: Effect
    let maxAttachments: Int
    let maxFrame0Bytes: Int
    let lane: Lane
    /// How often one caller may call it; nil for no limit.
    let rate: RateLimit?
    /// How often one client address may call it; nil for no limit.
    var addressLimit: AddressLimit?
    /// The one kind of peer that may call it (`PeerRole`: services, or the operator's
    /// `here`); nil for any. Without CURVE every peer is trusted as both.
    var onlyFor: PeerRole?
    /// Registered callers must be in it (`HEREABOUTS_REQUIRE_VERIFIED_EMAIL=writes`); nil for no such rule.
    var confirmedEmails: ConfirmedEmails?
    let run: @Sendable (RequestEnvelope, RequestContext) throws -> HandlerOutput
}

/// A budget per client address on ops that a fresh account or no account at all
/// would otherwise sidestep: creating accounts, looking users up by email. It counts
/// the end client's address a service relays (`origin`, by `ClientAddress.budgetKey`),
/// so requests that relay none (operators' `here`, the services) are not counted.
public struct AddressLimit: Sendable {
    let limiter: RateLimiter
    /// The `rate_limited` message once it is spent.
    let refusal: String

    public init(_ limiter: RateLimiter, refusal: String) {
        self.limiter = limiter
        self.refusal = refusal
    }
}

/// A per-caller limit on an op.
enum RateLimit: Sendable {
    /// The service's budget of writes per caller (`HEREABOUTS_RATE_LIMIT`), shared by
    /// every write op that counts against it.
    case callerWrites
    /// A bucket per caller for this op alone.
    case own(RateLimiter)
}

struct HandlerOutput: Sendable {
    var frame0: Data
    var attachments: [Data] = []
}

/// A reply body with binary frames after frame 0.
public struct Reply<Value: Sendable>: Sendable {
    public var value: Value
    public var attachments: [Data]

    public init(_ value: Value, attachments: [Data]) {
        self.value = value
        self.attachments = attachments
    }
}

/// The reply of a state-changing op, kept in the same transaction as the change.
/// Only `RequestContext.commit` makes one; its type is the op's reply type.
public struct Committed<Value: Sendable>: Sendable {
    let frame0: Data
}
