import Foundation
import GRDB

/// How hard a commit tries to survive a power loss (see Docs/OPERATIONS.md).
public enum Durability: Sendable {
    /// `synchronous=FULL`: a commit is on disk before it is acknowledged.
    case full
    /// `synchronous=NORMAL` in WAL mode: a power loss may undo the last commits, but
    /// the file is never corrupted.
    case normal
}

/// A service's own SQLite file (`<data dir>/<service>.sqlite`): a WAL-mode pool
/// holding the service's tables and ServiceKit's (idempotency log, change outbox,
/// feed cursors), migrated when opened.
public final class ServiceDatabase: Sendable {
    public let pool: DatabasePool
    public let path: String
    /// Requests' write transactions, joined when they arrive together.
    let groupCommit: GroupCommit
    /// A connection of its own for checkpoints, so that they run beside the writer.
    private let checkpointer: DatabaseQueue

    /// Opens (creating when needed) the database and runs ServiceKit's migrations,
    /// then the service's own, registered by `migrations`.
    public init(path: String, durability: Durability = .normal,
                migrations: (inout DatabaseMigrator) -> Void) throws {
        var configuration = Configuration()
        configuration.label = URL(fileURLWithPath: path).lastPathComponent
        // Writers wait for each other instead of failing: several threads write.
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
            // The housekeeper checkpoints every second from its own connection
            // (`checkpoint()`), beside the writer. The commit that takes the WAL past
            // 100 MiB checkpoints itself, should that fall behind; and a WAL grown
            // past 64 MiB is cut back once it has been copied.
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 25000")
            try db.execute(sql: "PRAGMA journal_size_limit = 67108864")
            // Statement journals (a statement inside a savepoint) and sorts stay in
            // memory instead of temporary files created and deleted on every use.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // A page cache of up to 32 MiB per connection instead of 2 MiB: the
            // indexes' inner pages of a million-row table stay in memory, so an
            // insert does not read them back from the OS page cache.
            try db.execute(sql: "PRAGMA cache_size = -32768")
        }
        try FileManager.default.createDirectory(
            at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
        self.path = path
        self.pool = try DatabasePool(path: path, configuration: configuration)
        self.groupCommit = GroupCommit(writer: pool)
        self.checkpointer = try DatabaseQueue(path: path, configuration: configuration)

        var migrator = DatabaseMigrator()
        ServiceKitSchema.register(in: &migrator)
        migrations(&migrator)
        try migrator.migrate(pool)
    }

    /// Copies committed pages from the WAL back into the database file: a passive
    /// checkpoint, which takes no lock that writers or readers wait for. Run from
    /// the housekeeper every second, so that commits seldom pay for a checkpoint.
    public func checkpoint() throws {
        try checkpointer.writeWithoutTransaction { db in
            _ = try db.checkpoint(.passive)
        }
    }

    /// The file for `service` in `directory`.
    public static func path(service: String, in directory: String) -> String {
        URL(fileURLWithPath: directory).appendingPathComponent("\(service).sqlite").path
    }
}

/// ServiceKit's tables, in every service's file. A shipped migration is never
/// changed; later changes are new migrations.
enum ServiceKitSchema {
    static func register(in migrator: inout DatabaseMigrator) {
        migrator.registerMigration("servicekit-1") { db in
            // The kept reply (or, for ops that hand out tokens, the session to
            // re-issue) of each state-changing request.
            try db.execute(sql: """
                CREATE TABLE idempotency (
                    op TEXT NOT NULL,
                    request_id TEXT NOT NULL,
                    caller TEXT NOT NULL,
                    fingerprint BLOB NOT NULL,
                    is_session INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    created_at REAL NOT NULL,
                    PRIMARY KEY (op, request_id, caller)
                ) WITHOUT ROWID;
                CREATE INDEX idempotency_created_at ON idempotency(created_at);
                """)
            // The transactional outbox: the latest change per entity, in commit order.
            // A change is inserted before the entity's older one is deleted, so the
            // highest seq is never deleted and a new one is always higher (without
            // AUTOINCREMENT's extra page per commit).
            try db.execute(sql: """
                CREATE TABLE change (
                    seq INTEGER PRIMARY KEY,
                    entity TEXT NOT NULL,
                    -- NULL: the entry is the entity's current row (ChangeOutbox.recordCurrent).
                    payload TEXT
                );
                CREATE INDEX change_entity ON change(entity);
                """)
            // How far this service has applied each feed it follows.
            try db.execute(sql: """
                CREATE TABLE feed_cursor (
                    feed TEXT PRIMARY KEY NOT NULL,
                    seq INTEGER NOT NULL
                ) WITHOUT ROWID;
                """)
        }
    }
}
