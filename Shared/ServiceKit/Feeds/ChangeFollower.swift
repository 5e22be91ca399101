import Contracts
import Foundation
import GRDB
import Logging
import ServiceClient
import Synchronization
import Wire
import ZeroMQ

/// A follower of a change feed, as `<service>.ready` reports it.
public protocol FeedFollower: Sendable {
    func readiness() throws -> FeedReadiness
    /// Starts following on a thread of its own.
    func start()
    /// Stops following; returns once the thread has finished its current batch.
    func stop()
}

extension ChangeFollower: FeedFollower {}

/// Follows another service's change feed into this service's database.
///
/// Each batch and the new cursor are applied in one transaction of the follower's
/// own file, so a crash at any point neither loses nor repeats a change. The
/// follower wakes on the source's PUB notice and polls every second as well, so a
/// lost notice only delays.
public final class ChangeFollower<Change: FeedChange>: Sendable {
    public struct Feed: Sendable {
        /// The cursor's name in `feed_cursor`: the source service (`auth`, `catalogue`).
        public var name: String
        public var requestEndpoint: String
        /// The source's PUB socket, for prompt notices; nil polls only.
        public var eventsEndpoint: String?
        public var op: Op<ChangesRequest, ChangesReply<Change>>
        public var batchSize: Int
        public var pollInterval: TimeInterval
        public var context: Context
        /// CURVE as a client of the source (its ROUTER and PUB sockets); nil for plaintext.
        public var curve: CurveRole?

        public init(name: String, requestEndpoint: String, eventsEndpoint: String?,
                    op: Op<ChangesRequest, ChangesReply<Change>>, batchSize: Int = 500,
                    pollInterval: TimeInterval = 1, context: Context = .shared, curve: CurveRole? = nil) {
            self.curve = curve
            self.name = name
            self.requestEndpoint = requestEndpoint
            self.eventsEndpoint = eventsEndpoint
            self.op = op
            self.batchSize = batchSize
            self.pollInterval = pollInterval
            self.context = context
        }
    }

    /// The ids of the entities this service holds from the feed, read inside the
    /// transaction that ends a replay: those the replay did not bring are deleted.
    public typealias Held = @Sendable (Database) throws -> [String]

    public let feed: Feed
    private let database: ServiceDatabase
    private let apply: @Sendable ([Change], Database) throws -> Void
    private let held: Held
    private let logger: Logger
    private let controlEndpoint = "inproc://follower-\(UUID().uuidString)"
    private let thread = Mutex<ServiceThread?>(nil)
    /// The highest seq the source has announced, for reporting lag.
    private let announcedSeq = Atomic<Int64>(0)
    /// When a catch-up last read the feed to its end (uptime seconds; 0: never).
    private let caughtUpAt = Atomic<Double>(0)
    /// The cursor as of the last batch whose transaction and after-commit work (a
    /// service's in-memory indexes, `Database.afterNextTransaction`) are both done;
    /// `.max` until a catch-up has read the file's.
    private let appliedSeq = Atomic<Int64>(.max)

    /// - Parameters:
    ///   - held: the ids of the entities this service holds from the feed (see `Held`).
    ///   - apply: applies one batch inside the transaction that also moves the
    ///     cursor. It must not open transactions of its own.
    public init(feed: Feed, database: ServiceDatabase, logger: Logger, held: @escaping Held,
                apply: @escaping @Sendable ([Change], Database) throws -> Void) {
        self.feed = feed
        self.database = database
        self.held = held
        self.apply = apply
        self.logger = logger
    }

    /// The seq of the last change applied: in the file, and in what the service keeps in
    /// memory. A batch's cursor is visible to readers at its commit, a moment before the
    /// work the service does after the commit (its indexes) is done: until then the
    /// previous batch's is given. (A test that waited for the file's cursor and then asked
    /// geo about a fence met the fence as it was before, once in a loaded CI run.)
    public func cursor() throws -> Int64 {
        min(try database.pool.read { db in try FeedCursor.seq(feed.name, in: db) }, appliedSeq.load(ordering: .acquiring))
    }

    /// How many announced changes are not applied yet (0 when none were announced).
    public func lag() throws -> Int64 {
        max(0, announcedSeq.load(ordering: .relaxed) - (try cursor()))
    }

    /// How the follower keeps up, for `<service>.ready`.
    public func readiness() throws -> FeedReadiness {
        let caughtUp = caughtUpAt.load(ordering: .relaxed)
        return FeedReadiness(feed: feed.name, lag: try lag(),
                             secondsSinceCaughtUp: caughtUp == 0 ? nil : ProcessInfo.processInfo.systemUptime - caughtUp)
    }

    /// Fetches and applies batches until the source has nothing newer (or
    /// `maxBatches` were applied); returns how many changes were applied.
    ///
    /// A source whose feed ends below the cursor, or has another epoch than the one
    /// the cursor counts in, was put back to an older copy of its file (`here
    /// restore`; a backup's copy has an epoch of its own, so this holds however many
    /// writes the restored source took since): what the follower holds may include
    /// entities the source no longer has. The follower then replays the whole feed (the feed is
    /// compacted, so from 0 it is the source's current state), noting each entity it
    /// brings, and at its end deletes whatever it holds that the replay did not
    /// bring, through `apply` like any deletion. A crash during the replay resumes it.
    @discardableResult
    public func catchUp(using client: ServiceClient, maxBatches: Int = .max) throws -> Int {
        var applied = 0
        var batches = 0
        var (after, epoch, replaying) = try database.pool.read { db in
            (try FeedCursor.seq(feed.name, in: db), try FeedCursor.epoch(feed.name, in: db), try FeedReplay.isReplaying(feed.name, in: db))
        }
        // Read before this catch-up's first write: every batch up to it was done whole.
        appliedSeq.store(after, ordering: .releasing)
        while batches < maxBatches {
            let reply = try client.call(feed.op, ChangesRequest(after: after, limit: feed.batchSize))
            let behind = reply.headSeq.map { $0 < after } ?? false
            if let sourceEpoch = reply.epoch, epoch == nil, !behind {
                // First contact (or a cursor from before epochs): this is the history it counts in.
                try database.pool.write { db in try FeedCursor.setEpoch(feed.name, sourceEpoch, in: db) }
                epoch = sourceEpoch
            }
            if behind || (reply.epoch != nil && reply.epoch != epoch) {
                let why = behind ? "ends at seq \(reply.headSeq ?? 0), before this service's cursor \(after)"
                    : "is of another history (epoch \(reply.epoch ?? "?"), the cursor counts in \(epoch ?? "?"))"
                logger.warning("\(feed.name)'s feed \(why): it was restored from an older copy; replaying it from the start",
                               metadata: ["feed": "\(feed.name)"])
                try database.pool.write { db in
                    try FeedReplay.begin(feed.name, sourceHead: reply.headSeq ?? 0, in: db)
                    try FeedCursor.set(feed.name, seq: 0, in: db)
                    try FeedCursor.setEpoch(feed.name, reply.epoch ?? epoch, in: db)
                }
                appliedSeq.store(0, ordering: .releasing)
                announcedSeq.store(reply.headSeq ?? 0, ordering: .relaxed)
                epoch = reply.epoch ?? epoch
                after = 0
                replaying = true
                continue
            }
            if let head = reply.headSeq {
                // Lag counts from the source's head, so a follower far behind (a new
                // replica, a long outage) says so before any notice arrives.
                announcedSeq.store(max(announcedSeq.load(ordering: .relaxed), head), ordering: .relaxed)
            }
            guard !reply.changes.isEmpty, reply.lastSeq > after else {
                if replaying {
                    try endReplay(at: after)
                    replaying = false
                }
                caughtUpAt.store(ProcessInfo.processInfo.systemUptime, ordering: .relaxed)
                break
            }
            try database.pool.write { db in
                try apply(reply.changes, db)
                if replaying { try FeedReplay.saw(reply.changes.lazy.map(\.entity), of: feed.name, in: db) }
                try FeedCursor.set(feed.name, seq: reply.lastSeq, in: db)
            }
            appliedSeq.store(reply.lastSeq, ordering: .releasing)
            announcedSeq.store(max(announcedSeq.load(ordering: .relaxed), reply.lastSeq), ordering: .relaxed)
            applied += reply.changes.count
            batches += 1
            after = reply.lastSeq
        }
        return applied
    }

    /// Deletes, in one transaction, what this service holds that the replay did not bring.
    private func endReplay(at seq: Int64) throws {
        let removed = try database.pool.write { db in
            let gone = try held(db).filter { try !FeedReplay.wasSeen($0, of: feed.name, in: db) }
            for start in stride(from: 0, to: gone.count, by: feed.batchSize) {
                try apply(gone[start..<min(start + feed.batchSize, gone.count)].map { Change.deletion(of: $0, seq: seq) }, db)
            }
            try FeedReplay.end(feed.name, in: db)
            return gone.count
        }
        logger.notice("replayed \(feed.name)'s feed from the start; removed \(removed) it no longer has",
                      metadata: ["feed": "\(feed.name)"])
    }

    /// Starts following on a thread of its own.
    public func start() {
        thread.withLock { thread in
            guard thread == nil else { return }
            thread = ServiceThread(name: "follow-\(feed.name)") { [self] in run() }
        }
    }

    /// Stops following; returns once the thread has finished its current batch.
    public func stop() {
        guard let running = thread.withLock({ thread -> ServiceThread? in
            defer { thread = nil }
            return thread
        }) else { return }
        if let control = try? feed.context.makeSocket(.push) {
            try? control.set(.linger(milliseconds: 0))
            try? control.connect(controlEndpoint)
            _ = try? control.send(Data("stop".utf8))
            running.join()
            control.close()
        }
    }

    private func run() {
        let client = ServiceClient(service: feed.name, endpoint: feed.requestEndpoint, timeout: 2, tries: 1, curve: feed.curve)
        let control: Socket
        var notices: Socket?
        do {
            control = try feed.context.makeSocket(.pull)
            try control.set(.linger(milliseconds: 0))
            try control.bind(controlEndpoint)
            if let events = feed.eventsEndpoint {
                let subscriber = try feed.context.makeSocket(.subscribe)
                try subscriber.set(.linger(milliseconds: 0))
                try subscriber.set(.maxMessageSize(bytes: Int64(Limits.messageBytes)))
                try subscriber.set(.subscribe(Data(ChangeNotice.topic(service: feed.name).utf8)))
                try subscriber.secure(feed.curve)
                try subscriber.connect(events)
                notices = subscriber
            }
        } catch {
            logger.critical("the \(feed.name) follower could not open its sockets", metadata: ["error": "\(error)"])
            return
        }
        defer {
            client.close()
            notices?.close()
            control.close()
        }
        var poller = Poller()
        let controlIndex = poller.addReadable(control)
        let noticeIndex = notices.map { poller.addReadable($0) }
        var lastProblem: String?
        while true {
            do {
                try catchUp(using: client)
                if lastProblem != nil {
                    logger.info("following \(feed.name) again")
                    lastProblem = nil
                }
            } catch {
                // Say it once, not every second while the source is away.
                let problem = "\(error)"
                if problem != lastProblem {
                    logger.warning("could not follow \(feed.name)", metadata: ["error": "\(problem)"])
                    lastProblem = problem
                }
            }
            do {
                try poller.poll(timeout: Int(feed.pollInterval * 1000))
                if poller.isReadable(controlIndex) { return }
                if let noticeIndex, poller.isReadable(noticeIndex), let notices {
                    // Several notices make one catch-up.
                    while let frames = try notices.receiveMessage(wait: false) {
                        if frames.count == 2, let notice = try? JSONValueDecoder().decode(ChangeNotice.self, from: frames[1]) {
                            announcedSeq.store(max(announcedSeq.load(ordering: .relaxed), notice.seq), ordering: .relaxed)
                        }
                    }
                }
            } catch {
                logger.error("the \(feed.name) follower stopped", metadata: ["error": "\(error)"])
                return
            }
        }
    }
}

/// The `feed_cursor` table's SQL.
public enum FeedCursor {
    public static func seq(_ feed: String, in db: Database) throws -> Int64 {
        try Int64.fetchOne(db, sql: "SELECT seq FROM feed_cursor WHERE feed = ?", arguments: [feed]) ?? 0
    }

    public static func set(_ feed: String, seq: Int64, in db: Database) throws {
        try db.execute(sql: "INSERT INTO feed_cursor (feed, seq) VALUES (?, ?) ON CONFLICT (feed) DO UPDATE SET seq = excluded.seq",
                       arguments: [feed, seq])
    }

    /// The source's epoch the cursor counts in (nil: not known yet).
    public static func epoch(_ feed: String, in db: Database) throws -> String? {
        try String.fetchOne(db, sql: "SELECT epoch FROM feed_cursor WHERE feed = ?", arguments: [feed])
    }

    public static func setEpoch(_ feed: String, _ epoch: String?, in db: Database) throws {
        try db.execute(sql: "INSERT INTO feed_cursor (feed, seq, epoch) VALUES (?, 0, ?) ON CONFLICT (feed) DO UPDATE SET epoch = excluded.epoch",
                       arguments: [feed, epoch])
    }
}

/// The `feed_replay` tables' SQL: a replay under way, and what it brought.
enum FeedReplay {
    static func isReplaying(_ feed: String, in db: Database) throws -> Bool {
        try Bool.fetchOne(db, sql: "SELECT 1 FROM feed_replay WHERE feed = ?", arguments: [feed]) ?? false
    }

    static func begin(_ feed: String, sourceHead: Int64, in db: Database) throws {
        try db.execute(sql: "DELETE FROM feed_replay_seen WHERE feed = ?", arguments: [feed])
        try db.execute(sql: "INSERT OR REPLACE INTO feed_replay (feed, source_head) VALUES (?, ?)", arguments: [feed, sourceHead])
    }

    static func saw(_ entities: some Sequence<String>, of feed: String, in db: Database) throws {
        let statement = try db.cachedStatement(sql: "INSERT OR IGNORE INTO feed_replay_seen (feed, entity) VALUES (?, ?)")
        for entity in entities { try statement.execute(arguments: [feed, entity]) }
    }

    static func wasSeen(_ entity: String, of feed: String, in db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM feed_replay_seen WHERE feed = ? AND entity = ?"),
                          arguments: [feed, entity]) ?? false
    }

    static func end(_ feed: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM feed_replay_seen WHERE feed = ?", arguments: [feed])
        try db.execute(sql: "DELETE FROM feed_replay WHERE feed = ?", arguments: [feed])
    }
}

extension ChangeFollower where Change == UserChange {
    /// A follower of `auth.changes`, at auth's endpoints as `settings` resolve them.
    public static func auth(settings: ServiceSettings, database: ServiceDatabase, logger: Logger, held: @escaping Held,
                            apply: @escaping @Sendable ([UserChange], Database) throws -> Void) throws -> ChangeFollower {
        let auth = settings.endpoints(of: AuthAPI.service)
        return ChangeFollower(
            feed: .init(name: AuthAPI.service, requestEndpoint: auth.requests, eventsEndpoint: auth.events, op: AuthAPI.changes,
                        curve: try settings.clientCurve(of: AuthAPI.service)),
            database: database, logger: logger, held: held, apply: apply)
    }
}

extension ChangeFollower where Change == PostChange {
    /// A follower of `catalogue.changes`, at catalogue's endpoints as `settings` resolve them.
    public static func catalogue(settings: ServiceSettings, database: ServiceDatabase, logger: Logger, held: @escaping Held,
                                 apply: @escaping @Sendable ([PostChange], Database) throws -> Void) throws -> ChangeFollower {
        let catalogue = settings.endpoints(of: CatalogueAPI.service)
        return ChangeFollower(
            feed: .init(name: CatalogueAPI.service, requestEndpoint: catalogue.requests, eventsEndpoint: catalogue.events,
                        op: CatalogueAPI.changes, curve: try settings.clientCurve(of: CatalogueAPI.service)),
            database: database, logger: logger, held: held, apply: apply)
    }
}
