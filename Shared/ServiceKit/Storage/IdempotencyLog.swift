import Foundation
import GRDB

/// What a service keeps of a state-changing request, under (op, id, caller).
public struct IdempotencyKey: Hashable, Sendable {
    public let op: String
    public let requestID: String
    /// The token's user id, or empty for a request without a token.
    public let caller: String

    public init(op: String, requestID: String, caller: String) {
        self.op = op
        self.requestID = requestID
        self.caller = caller
    }
}

/// A kept request: its body's fingerprint and what to answer a retry with.
public struct KeptRequest: Sendable {
    public enum Answer: Sendable {
        /// Frame 0 of the reply, to send again as it is.
        case reply(Data)
        /// The session to issue fresh tokens in (ops whose replies carry tokens).
        case session(Data)
    }

    public let fingerprint: Data
    public let answer: Answer
}

/// The idempotency table's SQL.
public enum IdempotencyLog {
    /// Replies are kept at least this long (the protocol's 24 hours).
    public static let retention: TimeInterval = 24 * 3600

    public static func find(_ key: IdempotencyKey, in db: Database) throws -> KeptRequest? {
        let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT fingerprint, is_session, payload FROM idempotency
            WHERE op = ? AND request_id = ? AND caller = ?
            """), arguments: [key.op, key.requestID, key.caller])
        guard let row else { return nil }
        let payload: Data = row["payload"]
        let isSession: Bool = row["is_session"]
        return KeptRequest(fingerprint: row["fingerprint"], answer: isSession ? .session(payload) : .reply(payload))
    }

    public static func record(_ key: IdempotencyKey, fingerprint: Data, answer: KeptRequest.Answer,
                              at date: Date = Date(), in db: Database) throws {
        let (isSession, payload): (Bool, Data) = switch answer {
        case .reply(let data): (false, data)
        case .session(let data): (true, data)
        }
        try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO idempotency (op, request_id, caller, fingerprint, is_session, payload, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [key.op, key.requestID, key.caller, fingerprint, isSession, payload, date.timeIntervalSince1970])
    }

    /// Forgets requests older than the retention period; returns how many.
    ///
    /// Requests are kept in the order they were answered, which is time order, so
    /// the old ones are those before the first recent one: found by reading just
    /// the rows to delete, with no index on the time. A clock set back can leave a
    /// few behind for the next purge; none goes early.
    @discardableResult
    public static func purge(before date: Date, in db: Database) throws -> Int {
        try db.execute(sql: """
            DELETE FROM idempotency WHERE created_at < ?1
            AND seq < IFNULL((SELECT seq FROM idempotency WHERE created_at >= ?1 ORDER BY seq LIMIT 1), 9223372036854775807)
            """, arguments: [date.timeIntervalSince1970])
        return db.changesCount
    }
}
