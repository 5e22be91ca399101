import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Synchronization
import Wire

/// The catalogue service: posts, images, ratings and trips in
/// `<data dir>/catalogue.sqlite`, the `catalogue.changes` feed, and a follower of
/// `auth.changes`.
public final class CatalogueService: RunnableService {
    public let settings: ServiceSettings
    let store: CatalogueStore
    let follower: ChangeFollower<UserChange>
    private let server: Server
    private let housekeeper: Housekeeper
    private let publisher = Mutex<EventPublisher?>(nil)
    private let logger: Logger

    public init(settings: ServiceSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        let database = try ServiceDatabase(path: settings.databasePath, durability: .normal, maxBytes: settings.databaseMaxBytes) { migrator in
            CatalogueSchema.register(in: &migrator)
        }
        let store = CatalogueStore(database: database)
        let deletedUsers = DeletedUsers(try store.deletedUsers())
        var router = Router(service: CatalogueAPI.service)
        CatalogueHandlers(store: store).register(into: &router)

        self.follower = try ChangeFollower.auth(settings: settings, database: database, logger: logger, held: store.heldUserIds) { changes, db in
            let deleted = try store.apply(changes, now: Date(), in: db)
            if !deleted.isEmpty {
                db.afterNextTransaction { _ in deletedUsers.insert(deleted) }
            }
        }
        self.store = store
        self.housekeeper = Housekeeper(tasks: [.forgetKeptReplies(in: database), .checkpoint(database)], logger: logger)
        self.server = Server(
            configuration: .init(service: CatalogueAPI.service, endpoint: settings.endpoint, workers: settings.workers,
                                 rateLimit: settings.rateLimit, security: ServerSecurity(settings)),
            router: router, database: database, verifier: try TokenVerifier.forService(settings),
            callerCheck: deletedUsers.check, followers: [follower], logger: logger)
    }

    /// Where clients connect (with the port a `:*` endpoint was given).
    public var endpoint: String { server.endpoint }

    public func answer(_ frames: [Data]) -> [Data] { server.answer(frames) }

    public var ops: [String] { server.ops }

    public func start() throws {
        if let events = settings.eventsEndpoint {
            let publisher = try EventPublisher(endpoint: events, security: ServerSecurity(settings),
                                               policy: .changeNotices(of: CatalogueAPI.service), logger: logger)
            store.outbox.announceCommits(of: store.database, on: publisher)
            self.publisher.withLock { $0 = publisher }
        }
        try server.start()
        follower.start()
        housekeeper.start()
    }

    public func stop() {
        follower.stop()
        server.stop()
        housekeeper.stop()
        publisher.withLock { $0?.close() }
    }
}
