import Foundation
import GRDB

/// What the senders of a service's outboxes share: being woken by the commit that queued
/// work (auth's mail), and the wait before a retry (auth's mail, chat's pushes). Chat's
/// pushes wake their sender from the send's handler instead: their outbox is the
/// message, and SQLite tells no observer of a WITHOUT ROWID table's rows.
public enum OutboxWake {
    /// Calls `wake` after each commit that inserted into one of `tables`, so queued
    /// work leaves within moments of the request that queued it.
    public static func observe(_ tables: Set<String>, in database: ServiceDatabase, wake: @escaping @Sendable () -> Void) {
        database.pool.add(transactionObserver: InsertObserver(tables: tables, wake: wake), extent: .databaseLifetime)
    }

    /// `first` after the first failure, doubling to at most an hour, with a tenth of
    /// jitter so a relay or push service that comes back is not met by everything at once.
    public static func backoff(afterAttempts attempts: Int, first: TimeInterval) -> TimeInterval {
        let base = min(3_600, first * pow(2, Double(min(max(attempts - 1, 0), 12))))
        return base * Double.random(in: 0.9...1.1)
    }
}

/// GRDB calls it on the writer's queue, one transaction at a time.
private final class InsertObserver: TransactionObserver {
    private let tables: Set<String>
    private let wake: @Sendable () -> Void
    private var inserted = false

    init(tables: Set<String>, wake: @escaping @Sendable () -> Void) {
        self.tables = tables
        self.wake = wake
    }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        if case .insert(let table) = eventKind { return tables.contains(table) }
        return false
    }

    func databaseDidChange(with event: DatabaseEvent) {
        inserted = true
    }

    func databaseDidCommit(_ db: Database) {
        if inserted { wake() }
        inserted = false
    }

    func databaseDidRollback(_ db: Database) {
        inserted = false
    }
}
