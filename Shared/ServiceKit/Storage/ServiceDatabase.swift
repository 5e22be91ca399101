import Contracts
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
    /// The most the file may grow to (`HEREABOUTS_DATABASE_MAX_BYTES`); past it writes
    /// are refused as on a full disk. Nil: the disk is the limit.
    public let maxBytes: Int64?
    /// Where `<service>.backup` makes its copies (`<name>/<service>.sqlite` in it):
    /// `HEREABOUTS_BACKUP_DIR`, else `backups` beside the file.
    public let backups: URL
    /// Requests' write transactions, joined when they arrive together.
    let groupCommit: GroupCommit
    /// A connection of its own for checkpoints, so that they run beside the writer.
    private let checkpointer: DatabaseQueue

    /// Opens (creating when needed) the database and runs ServiceKit's migrations,
    /// then the service's own, registered by `migrations`.
    public init(path: String, durability: Durability = .normal, maxBytes: Int64? = nil, backups: String? = nil,
                migrations: (inout DatabaseMigrator) -> Void) throws {
        var configuration = Configuration()
        configuration.label = URL(fileURLWithPath: path).lastPathComponent
        // Writers wait for each other instead of failing: several threads write.
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = \(durability == .full ? "FULL" : "NORMAL")")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
            // The housekeeper checkpoints four times a second (`checkpoint()`) and so
            // starts the WAL over before it grows large. The commit that takes the WAL past
            // 100 MiB checkpoints itself, should that fall behind. A WAL is cut back
            // only past 128 MiB: cutting it at every restart would make the commits
            // that follow allocate its blocks anew (and, on a disk mounted with
            // `discard`, wait for the freed ones to be discarded).
            try db.execute(sql: "PRAGMA wal_autocheckpoint = 25000")
            try db.execute(sql: "PRAGMA journal_size_limit = 134217728")
            // Statement journals (a statement inside a savepoint) and sorts stay in
            // memory instead of temporary files created and deleted on every use.
            try db.execute(sql: "PRAGMA temp_store = MEMORY")
            // A page cache of up to 32 MiB per connection instead of 2 MiB: the
            // indexes' inner pages of a million-row table stay in memory, so an
            // insert does not read them back from the OS page cache.
            try db.execute(sql: "PRAGMA cache_size = -32768")
            if let maxBytes {
                let pageSize = try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
                try db.execute(sql: "PRAGMA max_page_count = \(max(1, maxBytes / pageSize))")
            }
        }
        try Self.prepareFiles(path)
        self.path = path
        self.maxBytes = maxBytes
        self.backups = backups.map { URL(fileURLWithPath: $0, isDirectory: true) }
            ?? URL(fileURLWithPath: path).deletingLastPathComponent().appendingPathComponent("backups", isDirectory: true)
        self.pool = try DatabasePool(path: path, configuration: configuration)
        self.groupCommit = GroupCommit(writer: pool)
        self.checkpointer = try DatabaseQueue(path: path, configuration: configuration)

        var migrator = DatabaseMigrator()
        ServiceKitSchema.register(in: &migrator)
        migrations(&migrator)
        try migrator.migrate(pool)
    }

    /// Copies committed pages from the WAL back into the database file, so that the
    /// next commit starts the WAL over from its beginning.
    ///
    /// A checkpoint first syncs the WAL, and busy writing leaves tens of MiB of it
    /// to flush each second: 50-200 ms on a virtual disk. Run by a committing writer
    /// (SQLite's autocheckpoint), that would hold up every write for as long. So the
    /// copying is done by passive checkpoints from a connection of its own, beside
    /// the writer, each syncing only what was committed during the one before, until
    /// one is quick. Those never quite finish while commits keep coming, and a WAL
    /// that is never completely copied is never started over; so one last pass runs
    /// on the writer's connection, holding writes off for the few frames and the
    /// short syncs it has left (about 10 ms). With nothing new to copy, a pass costs
    /// no sync.
    public func checkpoint() throws {
        for _ in 0..<3 {
            let start = DispatchTime.now().uptimeNanoseconds
            guard let frames = try Self.passiveCheckpoint(checkpointer) else { return }
            // An empty WAL has started over already.
            if frames.walFrameCount == 0 { return }
            if DispatchTime.now().uptimeNanoseconds - start < 5_000_000 { break }
        }
        _ = try Self.passiveCheckpoint(pool)
    }

    /// A passive checkpoint's frame counts; nil when another checkpoint is under way.
    private static func passiveCheckpoint(_ writer: some DatabaseWriter) throws -> (walFrameCount: Int, checkpointedFrameCount: Int)? {
        do {
            return try writer.writeWithoutTransaction { db in try db.checkpoint(.passive) }
        } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY {
            return nil
        }
    }

    /// Less free than this, and the service is not ready: its next write may not fit.
    public static let minimumFreeBytes: Int64 = 64 * 1024

    /// The storage the file is on; with a size limit, the free bytes are at most
    /// what is left of it: of the pages the database has (its WAL's included), those
    /// in use.
    public func storage() -> StorageUse? {
        guard var use = StorageSpace.use(of: path) else { return nil }
        if let maxBytes, let used = try? pool.read({ db in
            try Int64.fetchOne(db, sql: "SELECT (page_count - freelist_count) * page_size FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()")
        }) {
            use.freeBytes = min(use.freeBytes, max(0, maxBytes - used))
        }
        return use
    }

    /// Whether the file takes a write now: one small row committed (a full disk or a
    /// read-only mount says no here before a user's write does), and room for more
    /// than that: a probe's row fits in a page the file has while a post does not.
    public func probeWrite(now: Date = Date()) -> DatabaseReadiness {
        if let free = storage()?.freeBytes, free < Self.minimumFreeBytes {
            return DatabaseReadiness(writable: false, problem: "the storage is full: \(free) bytes free")
        }
        do {
            try pool.write { db in
                try db.execute(sql: "INSERT OR REPLACE INTO ready_probe (id, at) VALUES (1, ?)", arguments: [now.timeIntervalSince1970])
            }
            return DatabaseReadiness(writable: true)
        } catch let error as DatabaseError {
            // SQLite's own words ("database or disk is full"), without the statement.
            return DatabaseReadiness(writable: false, problem: error.message ?? "\(error.resultCode)")
        } catch {
            return DatabaseReadiness(writable: false, problem: "the write failed")
        }
    }

    /// The data directory readable by its owner alone (0700) and the file, its WAL and
    /// its shared memory likewise (0600): auth's file holds the signing key and
    /// password hashes, every file someone's data. SQLite gives the WAL and shm files
    /// the database file's mode, so the file is made before SQLite opens it; files
    /// left by an earlier version are tightened.
    static func prepareFiles(_ path: String) throws {
        let files = FileManager.default
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        if !files.fileExists(atPath: directory) {
            try files.createDirectory(atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } else if let attributes = try? files.attributesOfItem(atPath: directory),
                  let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue, mode & 0o077 != 0,
                  mode & 0o1000 == 0, (attributes[.ownerAccountID] as? NSNumber)?.uint32Value == getuid() {
            // A directory shared on purpose (sticky, as /tmp is) or someone else's is left alone.
            try files.setAttributes([.posixPermissions: 0o700], ofItemAtPath: directory)
        }
        if !files.fileExists(atPath: path) {
            guard files.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw CocoaError(.fileWriteNoPermission, userInfo: [NSFilePathErrorKey: path])
            }
        }
        for file in [path, path + "-wal", path + "-shm"] where files.fileExists(atPath: file) {
            try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file)
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
        migrator.registerMigration("servicekit-2") { db in
            // Kept replies in a table appended to in time order, found through a
            // narrow index on their key. Stored in key order, each create's reply
            // (hundreds of bytes) went into a leaf of its own and split it every few
            // inserts: half the pages a create's commit wrote. Old ones are purged
            // from the front (`IdempotencyLog.purge`), with no index on the time.
            try db.execute(sql: """
                CREATE TABLE idempotency_by_seq (
                    seq INTEGER PRIMARY KEY,
                    op TEXT NOT NULL,
                    request_id TEXT NOT NULL,
                    caller TEXT NOT NULL,
                    fingerprint BLOB NOT NULL,
                    is_session INTEGER NOT NULL,
                    payload BLOB NOT NULL,
                    created_at REAL NOT NULL
                );
                INSERT INTO idempotency_by_seq (op, request_id, caller, fingerprint, is_session, payload, created_at)
                    SELECT op, request_id, caller, fingerprint, is_session, payload, created_at
                    FROM idempotency ORDER BY created_at;
                DROP TABLE idempotency;
                ALTER TABLE idempotency_by_seq RENAME TO idempotency;
                CREATE UNIQUE INDEX idempotency_key ON idempotency(op, request_id, caller);
                """)
        }
        migrator.registerMigration("servicekit-3") { db in
            // One row rewritten by `<service>.ready`, to learn that the file takes writes.
            try db.execute(sql: "CREATE TABLE ready_probe (id INTEGER PRIMARY KEY CHECK (id = 1), at REAL NOT NULL)")
        }
        migrator.registerMigration("servicekit-4") { db in
            // A feed replayed from the start because its source went back to an older
            // copy (`FeedReplay`): the replay's existence, and each entity it brought,
            // so that what the source no longer has can be removed once it ends.
            try db.execute(sql: """
                CREATE TABLE feed_replay (feed TEXT PRIMARY KEY NOT NULL, source_head INTEGER NOT NULL) WITHOUT ROWID;
                CREATE TABLE feed_replay_seen (
                    feed TEXT NOT NULL,
                    entity TEXT NOT NULL,
                    PRIMARY KEY (feed, entity)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("servicekit-5") { db in
            // The feed's epoch: which history of this file the feed's seqs belong to.
            // A backup's copy gets an epoch of its own (`DatabaseBackup`), so a file put
            // back from it tells its followers so, however many writes it takes after.
            // Each follower keeps the epoch its cursor counts in.
            try db.execute(sql: """
                CREATE TABLE feed_epoch (id INTEGER PRIMARY KEY CHECK (id = 1), epoch TEXT NOT NULL);
                INSERT INTO feed_epoch (id, epoch) VALUES (1, lower(hex(randomblob(12))));
                ALTER TABLE feed_cursor ADD COLUMN epoch TEXT;
                """)
        }
    }
}
