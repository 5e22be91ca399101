import Contracts
import Foundation
import GRDB
import Wire

/// The transactional outbox of a service whose data others follow.
///
/// A store records a change in the same transaction as the data it describes, so
/// the feed never misses or invents a change. Recording replaces the entity's
/// earlier change: the feed is always compacted to the latest change per entity,
/// deletions included, and a follower starting from 0 rebuilds the current state.
///
/// Because only an entity's latest change is kept, an upsert's entry is always the
/// entity's current state. A service whose rows already hold that state as JSON (a
/// post) records it with `recordCurrent` and gives `currentEntry`, which writes the
/// entry from the row when the feed is read, instead of storing the JSON twice.
public struct ChangeOutbox: Sendable {
    /// Writes the members of `entity`'s feed entry but `seq` (no braces), from its
    /// current row, inside the reading transaction.
    public typealias CurrentEntry = @Sendable (_ entity: String, _ db: Database, _ writer: inout JSONWriter) throws -> Void

    public let service: String
    private let currentEntry: CurrentEntry?

    public init(service: String, currentEntry: CurrentEntry? = nil) {
        self.service = service
        self.currentEntry = currentEntry
    }

    /// Records `change` for `entity` in the current transaction. Its `seq` is assigned
    /// here; whatever the value carries is ignored.
    public func record(_ change: some FeedChange, entity: String, in db: Database) throws {
        guard case .object(var object) = try JSONValueEncoder().encode(change) else {
            throw ServiceError.internal
        }
        object["seq"] = nil
        try record(payload: String(decoding: JSONWriter.data(.object(object)), as: UTF8.self), entity: entity, in: db)
    }

    /// Records a change already written as JSON: an object with every field of the
    /// feed's entries but `seq`. `isFirst` says the entity was just made, so it has
    /// no earlier change to compact away (saving an index search).
    public func record(payload: String, entity: String, isFirst: Bool = false, in db: Database) throws {
        try insert(entity: entity, payload: payload, isFirst: isFirst, in: db)
    }

    /// Records that `entity` now is what its row holds; the entry is written from the
    /// row by `currentEntry` when the feed is read.
    public func recordCurrent(entity: String, isFirst: Bool = false, in db: Database) throws {
        precondition(currentEntry != nil, "the \(service) outbox has no currentEntry to write entries from rows")
        try insert(entity: entity, payload: nil, isFirst: isFirst, in: db)
    }

    private func insert(entity: String, payload: String?, isFirst: Bool, in db: Database) throws {
        // Insert first, so the new seq is above the entity's earlier one, then
        // compact: the latest change per entity is all a follower needs.
        try db.cachedStatement(sql: "INSERT INTO change (entity, payload) VALUES (?, ?)").execute(arguments: [entity, payload])
        guard !isFirst else { return }
        try db.cachedStatement(sql: "DELETE FROM change WHERE entity = ? AND seq < ?")
            .execute(arguments: [entity, db.lastInsertedRowID])
    }

    /// The body of a `<service>.changes` reply, written straight from the stored JSON.
    ///
    /// Stops early to keep the reply under the protocol's page size.
    public func changesReply(after: Int64, limit: Int, in db: Database) throws -> RawJSON {
        var writer = JSONWriter(capacity: 4096)
        writer.appendASCII("{\"changes\":[")
        var lastSeq = after
        var count = 0
        let rows = try Row.fetchCursor(db, sql: "SELECT seq, entity, payload FROM change WHERE seq > ? ORDER BY seq LIMIT ?",
                                       arguments: [after, limit])
        while let row = try rows.next() {
            let seq: Int64 = row[0]
            let start = writer.bytes.count
            if count > 0 { writer.appendASCII(",") }
            writer.appendASCII("{\"seq\":")
            writer.write(seq)
            if let payload: String = row[2] {
                // The stored object minus its opening brace, after the seq.
                if payload.utf8.count > 2 { writer.appendASCII(",") }
                writer.writeRaw(payload.utf8.dropFirst())
            } else if let currentEntry {
                writer.appendASCII(",")
                try currentEntry(row[1], db, &writer)
                writer.appendASCII("}")
            } else {
                throw ServiceError.internal
            }
            if count > 0 && writer.bytes.count > Limits.replyPageBytes - 64 {
                writer.truncate(to: start)
                break
            }
            lastSeq = seq
            count += 1
        }
        writer.appendASCII("],\"lastSeq\":")
        writer.write(lastSeq)
        writer.appendASCII(",\"headSeq\":")
        writer.write(try self.lastSeq(in: db))
        if let epoch = try String.fetchOne(db.cachedStatement(sql: "SELECT epoch FROM feed_epoch")) {
            writer.appendASCII(",\"epoch\":")
            writer.write(epoch)
        }
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }

    /// The highest seq recorded so far (0 when none).
    public func lastSeq(in db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM change") ?? 0
    }

    /// Announces each commit that recorded changes on `publisher`, as
    /// `<service>.changed/` with `{"seq":N}`.
    public func announceCommits(of database: ServiceDatabase, on publisher: EventPublisher) {
        let announcer = CommitAnnouncer(topic: ChangeNotice.topic(service: service), publisher: publisher)
        database.pool.add(transactionObserver: announcer, extent: .databaseLifetime)
    }
}

/// Watches the outbox table and publishes the highest new seq after each commit.
/// GRDB calls it on the writer's queue only, one transaction at a time.
private final class CommitAnnouncer: TransactionObserver {
    let topic: String
    let publisher: EventPublisher
    private var pendingSeq: Int64 = 0

    init(topic: String, publisher: EventPublisher) {
        self.topic = topic
        self.publisher = publisher
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        if case .insert(let table) = eventKind { return table == "change" }
        return false
    }

    func databaseDidChange(with event: DatabaseEvent) {
        pendingSeq = max(pendingSeq, event.rowID)
    }

    func databaseDidCommit(_ db: Database) {
        guard pendingSeq > 0 else { return }
        let notice = ChangeNotice(seq: pendingSeq)
        pendingSeq = 0
        if let body = try? JSONValueEncoder().encodeData(notice) {
            publisher.publish(topic: topic, body: body)
        }
    }

    func databaseDidRollback(_ db: Database) {
        pendingSeq = 0
    }
}

/// A reply body that is already JSON text, spliced into the envelope as it is.
public struct RawJSON: Sendable {
    public let bytes: [UInt8]
    public init(_ bytes: [UInt8]) { self.bytes = bytes }
}
