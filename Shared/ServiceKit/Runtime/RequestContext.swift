import Contracts
import Foundation
import GRDB
import Logging
import Wire

/// What a handler knows about the request it serves, and how it commits.
///
/// One per request, used on one thread.
public final class RequestContext {
    public let requestID: String
    public let op: String
    /// The verified token's user, when a token was sent.
    public let caller: Caller?
    /// Whom the request comes from, for budgets kept per origin: the end client's
    /// address when a service (the edge) relays it, else the peer's key, else `local`.
    public let origin: String
    /// Frames 1…n of the request.
    public let attachments: [Data]
    public let receivedAt: Date
    /// The service's logger with this request's id and op as metadata; made on
    /// first use, since setting metadata on a log handler is not free.
    public lazy var logger: Logger = {
        var logger = serviceLogger
        logger[metadataKey: "request"] = "\(requestID)"
        logger[metadataKey: "op"] = "\(op)"
        return logger
    }()

    private let serviceLogger: Logger

    /// False on the front thread, where a handler must not wait for IO: it throws
    /// `Deferred` instead, and the request runs again on a worker.
    public let mayWait: Bool

    /// Thrown by a front-lane handler that needs IO (a cache miss, say).
    public struct Deferred: Error {
        public init() {}
    }

    let effect: Effect
    let database: ServiceDatabase?
    private(set) var idempotencyKey: IdempotencyKey?
    private(set) var fingerprint: Data?
    /// Set when the answer came from the idempotency log, so it is not kept again.
    private(set) var answeredFromLog = false

    init(requestID: String, op: String, caller: Caller?, origin: String, attachments: [Data], receivedAt: Date,
         logger: Logger, effect: Effect, database: ServiceDatabase?, mayWait: Bool) {
        self.requestID = requestID
        self.op = op
        self.caller = caller
        self.origin = origin
        self.attachments = attachments
        self.receivedAt = receivedAt
        self.serviceLogger = logger
        self.effect = effect
        self.database = database
        self.mayWait = mayWait
    }

    /// The caller; ops declared with `.user` or `.registered` access always have one.
    public func requireCaller() throws -> Caller {
        guard let caller else { throw ServiceError.unauthenticated("this op needs an access token") }
        return caller
    }

    /// Runs `work` in a write transaction and returns its value as the reply. For a
    /// state-changing op the reply is kept, in that same transaction, under the
    /// request's id: a retry gets it back and changes nothing. Requests that commit
    /// at the same moment share a transaction, each in a savepoint of its own.
    public func commit<Value: Encodable & Sendable>(_ work: (Database) throws -> Value) throws -> Committed<Value> {
        try commitFrame { db in try successFrame(try work(db)) }
    }

    /// Like `commit`, for a reply body that is already JSON (a stored post, say).
    public func commit<Value: Sendable>(as type: Value.Type, raw work: (Database) throws -> RawJSON) throws -> Committed<Value> {
        try commitFrame { db in ReplyEnvelope.success(id: requestID, rawBody: try work(db).bytes) }
    }

    /// Like `commit`, for writes whose reply is known before the transaction:
    /// the reply's encoding stays out of the transaction others wait for.
    public func commit<Value: Sendable>(as type: Value.Type, reply: RawJSON, _ work: (Database) throws -> Void) throws -> Committed<Value> {
        let frame0 = ReplyEnvelope.success(id: requestID, rawBody: reply.bytes)
        return try commitFrame { db in
            try work(db)
            return frame0
        }
    }

    private func commitFrame<Value>(_ work: (Database) throws -> Data) throws -> Committed<Value> {
        let database = try requireDatabase()
        return try database.groupCommit.write { db in
            guard effect == .write, let key = idempotencyKey, let fingerprint else {
                return Committed(frame0: try work(db))
            }
            // A retry of a request that was committed gets the kept reply, unchanged.
            if let kept = try IdempotencyLog.find(key, in: db) {
                guard kept.fingerprint == fingerprint, case .reply(let frame0) = kept.answer else { throw reusedID() }
                answeredFromLog = true
                return Committed(frame0: frame0)
            }
            let frame0 = try work(db)
            try IdempotencyLog.record(key, fingerprint: fingerprint, answer: .reply(frame0), in: db)
            return Committed(frame0: frame0)
        }
    }

    /// Like `commit`, for replies that carry tokens: keeps `state` (the session the
    /// tokens belong to) instead of the reply, for `Router.sessionWrite`'s replay.
    public func commitSession<Value: Encodable & Sendable, State: Encodable>(
        _ work: (Database) throws -> (Value, State)
    ) throws -> Committed<Value> {
        let database = try requireDatabase()
        return try database.groupCommit.write { db in
            let (value, state) = try work(db)
            if let key = idempotencyKey, let fingerprint {
                let kept = try JSONValueEncoder().encodeData(state)
                try IdempotencyLog.record(key, fingerprint: fingerprint, answer: .session(kept), in: db)
            }
            return Committed(frame0: try successFrame(value))
        }
    }

    func successFrame<Value: Encodable>(_ value: Value) throws -> Data {
        ReplyEnvelope.success(id: requestID, body: try JSONValueEncoder().encode(value))
    }

    // MARK: Idempotency, for the router

    func beginWrite(fingerprint: Data) throws {
        self.fingerprint = fingerprint
        self.idempotencyKey = IdempotencyKey(op: op, requestID: requestID, caller: caller?.userID ?? "")
    }

    /// What was answered before to this request id, or nil when it is new.
    /// The same id with a different body is a `conflict`.
    func keptAnswer() throws -> KeptRequest.Answer? {
        guard let key = idempotencyKey, let fingerprint, let database else { return nil }
        guard let kept = try database.pool.read({ db in try IdempotencyLog.find(key, in: db) }) else { return nil }
        answeredFromLog = true
        guard kept.fingerprint == fingerprint else { throw reusedID() }
        return kept.answer
    }

    /// The answer to a state-changing request that failed before committing: the
    /// kept answer when the id was answered before (a retry whose first try went
    /// through), else the failure, kept so a retry gets it too.
    func answerFailure(_ frame0: Data) throws -> Data {
        guard effect != .read, !answeredFromLog, let key = idempotencyKey, let fingerprint, let database else { return frame0 }
        return try database.pool.write { db in
            if let kept = try IdempotencyLog.find(key, in: db) {
                guard kept.fingerprint == fingerprint else {
                    return ReplyEnvelope.failure(id: requestID, error: reusedID())
                }
                if case .reply(let keptFrame) = kept.answer { return keptFrame }
                return frame0
            }
            try IdempotencyLog.record(key, fingerprint: fingerprint, answer: .reply(frame0), in: db)
            return frame0
        }
    }

    private func reusedID() -> ServiceError {
        ServiceError.conflict("request id \"\(requestID)\" was already used for a different \(op) request")
    }

    private func requireDatabase() throws -> ServiceDatabase {
        guard let database else {
            logger.error("\(op) commits but its service has no database")
            throw ServiceError.internal
        }
        return database
    }
}
