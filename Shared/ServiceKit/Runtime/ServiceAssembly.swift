import Contracts
import Foundation
import GRDB
import Logging
import Synchronization

/// What a service is built on, before its handlers: its settings and logger, its
/// database (its schema's migrations run), and, for a service that follows
/// `auth.changes`, the users deleted there (`DeletedUsers`).
public struct ServiceBase: Sendable {
    public let settings: ServiceSettings
    public let logger: Logger
    public let database: ServiceDatabase
    let deletedUsers: DeletedUsers?
    /// The users auth's feed reported with a confirmed address (nil for a service that does not follow it).
    public let confirmedEmails: ConfirmedEmails?

    /// Opens the service's database with its schema; `followsUsers` when it follows
    /// `auth.changes`, whose deleted users it then refuses.
    public init(settings: ServiceSettings, logger: Logger, durability: Durability = .normal,
                followsUsers: Bool = true, schema: (inout DatabaseMigrator) -> Void) throws {
        self.settings = settings
        self.logger = logger
        database = try ServiceDatabase(path: settings.databasePath, durability: durability, maxBytes: settings.databaseMaxBytes,
                                       backups: settings.backupDirectory) { migrator in
            schema(&migrator)
            if followsUsers {
                DeletedUsers.register(in: &migrator)
                ConfirmedEmails.register(in: &migrator)
            }
        }
        deletedUsers = followsUsers ? try DeletedUsers(in: database) : nil
        confirmedEmails = followsUsers ? try ConfirmedEmails(in: database) : nil
    }

    /// A follower of `auth.changes`: `apply` applies a batch to the service's own
    /// tables, and the users deleted in it are refused once it commits.
    public func followUsers(held: @escaping ChangeFollower<UserChange>.Held,
                            apply: @escaping @Sendable ([UserChange], Database) throws -> Void) throws -> ChangeFollower<UserChange> {
        guard let deletedUsers, let confirmedEmails else {
            preconditionFailure("a service that follows auth.changes opens its base with followsUsers")
        }
        return try ChangeFollower.auth(settings: settings, database: database, logger: logger, held: held) { changes, db in
            try apply(changes, db)
            try deletedUsers.record(changes, in: db)
            try confirmedEmails.record(changes, in: db)
        }
    }

    /// Under `HEREABOUTS_REQUIRE_VERIFIED_EMAIL=writes`, refuses `ops` to registered
    /// users whose address auth's feed has not reported confirmed (anonymous users
    /// are left to the ops' own access rules). Does nothing otherwise.
    public func requireConfirmedEmail(for ops: [String], in router: inout Router) {
        guard settings.requireConfirmedEmail, let confirmedEmails else { return }
        for op in ops { router.requireConfirmedEmail(op, confirmedEmails) }
    }

    /// A follower of `catalogue.changes`.
    public func followPosts(held: @escaping ChangeFollower<PostChange>.Held,
                            apply: @escaping @Sendable ([PostChange], Database) throws -> Void) throws -> ChangeFollower<PostChange> {
        try ChangeFollower.catalogue(settings: settings, database: database, logger: logger, held: held, apply: apply)
    }
}

/// A service put together: its server, the feeds it follows, its housekeeper and
/// what it publishes, started and stopped in one order. A service declares its
/// schema, store, handlers and feeds (`ServiceBase`), and this does the rest.
public final class ServiceAssembly: Sendable {
    /// What a service publishes on its events endpoint, when it has one.
    public enum Publishing: Sendable {
        case nothing
        /// Its change feed's notices, as its outbox commits.
        case changes(ChangeOutbox)
        /// Events its handlers publish (to subscribers the channel's policy admits).
        case events(EventChannel)
    }

    public let settings: ServiceSettings
    private let server: Server
    private let followers: [any FeedFollower]
    private let housekeeper: Housekeeper
    private let publishing: Publishing
    private let database: ServiceDatabase
    private let logger: Logger
    private let publisher = Mutex<EventPublisher?>(nil)

    /// - Parameters:
    ///   - frontThreads, pools: as `Server.Configuration` has them.
    ///   - rateLimited: whether the settings' per-caller rate limit applies.
    ///   - verifier: the service's token verifier (by default auth's key, as the
    ///     settings find it).
    ///   - callerCheck: what every signed request is checked against (by default,
    ///     that its user was not deleted).
    ///   - housekeeping: tasks besides forgetting kept replies and checkpoints.
    ///   - healthDetails: what the service adds to its `health` (its outboxes: mail, pushes).
    public init(_ base: ServiceBase, service: String, router: Router, followers: [any FeedFollower] = [],
                publishing: Publishing = .nothing, frontThreads: Int = 1, pools: [String: Server.PoolConfiguration] = [:],
                rateLimited: Bool = true, verifier: TokenVerifier? = nil, callerCheck: CallerCheck? = nil,
                housekeeping: [Housekeeper.Task] = [], healthDetails: Server.HealthDetails? = nil) throws {
        settings = base.settings
        database = base.database
        logger = base.logger
        self.followers = followers
        self.publishing = publishing
        housekeeper = Housekeeper(tasks: [.forgetKeptReplies(in: base.database), .checkpoint(base.database)] + housekeeping,
                                  logger: base.logger)
        server = Server(
            configuration: .init(service: service, endpoint: base.settings.endpoint, frontThreads: frontThreads,
                                 workers: base.settings.workers, pools: pools, rateLimit: rateLimited ? base.settings.rateLimit : nil,
                                 security: ServerSecurity(base.settings)),
            router: router, database: base.database, verifier: try verifier ?? TokenVerifier.forService(base.settings),
            callerCheck: callerCheck ?? base.deletedUsers?.check, followers: followers, healthDetails: healthDetails,
            logger: base.logger)
    }

    /// Where clients connect (with the port a `:*` endpoint was given).
    public var endpoint: String { server.endpoint }

    public func answer(_ frames: [Data]) -> [Data] { server.answer(frames) }

    public var ops: [String] { server.ops }

    /// Requests waiting for a thread of the pool named `pool`.
    public func waiting(inPool pool: String) -> Int { server.waiting(inPool: pool) }

    /// Opens what it publishes, then serves, then follows, then keeps house.
    public func start() throws {
        if let endpoint = settings.eventsEndpoint {
            switch publishing {
            case .nothing:
                break
            case .changes(let outbox):
                let publisher = try EventPublisher(endpoint: endpoint, security: ServerSecurity(settings),
                                                   policy: .changeNotices(of: outbox.service), logger: logger)
                outbox.announceCommits(of: database, on: publisher)
                self.publisher.withLock { $0 = publisher }
            case .events(let channel):
                try channel.open(endpoint: endpoint, security: ServerSecurity(settings))
            }
        }
        try server.start()
        followers.forEach { $0.start() }
        housekeeper.start()
    }

    /// Stops following first, so that nothing changes while the server drains.
    public func stop() {
        followers.forEach { $0.stop() }
        server.stop()
        housekeeper.stop()
        publisher.withLock { $0?.close() }
        if case .events(let channel) = publishing { channel.close() }
    }
}

/// A service whose parts are a `ServiceAssembly`: runs as it does.
public protocol AssembledService: RunnableService {
    var assembly: ServiceAssembly { get }
}

extension AssembledService {
    /// Where clients connect (with the port a `:*` endpoint was given).
    public var endpoint: String { assembly.endpoint }

    public func answer(_ frames: [Data]) -> [Data] { assembly.answer(frames) }

    public var ops: [String] { assembly.ops }

    public func start() throws { try assembly.start() }

    public func stop() { assembly.stop() }
}
