import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Wire

/// The favourites service: each user's saved post ids in
/// `<data dir>/favourites.sqlite`, kept consistent by following `catalogue.changes`
/// (posts that exist; deleted posts leave every list) and `auth.changes` (a deleted
/// user's list goes, and their tokens are refused).
public final class FavouritesService: RunnableService {
    public let settings: ServiceSettings
    let store: FavouritesStore
    let postFollower: ChangeFollower<PostChange>
    let userFollower: ChangeFollower<UserChange>
    private let server: Server
    private let housekeeper: Housekeeper

    public init(settings: ServiceSettings, logger: Logger) throws {
        self.settings = settings
        let database = try ServiceDatabase(path: settings.databasePath, durability: .normal, maxBytes: settings.databaseMaxBytes) { migrator in
            FavouritesSchema.register(in: &migrator)
        }
        let store = FavouritesStore(database: database)
        let deletedUsers = DeletedUsers(try store.deletedUsers())

        postFollower = try ChangeFollower.catalogue(settings: settings, database: database, logger: logger, held: store.heldPostIds) { changes, db in
            try store.apply(changes, in: db)
        }
        userFollower = try ChangeFollower.auth(settings: settings, database: database, logger: logger, held: store.heldUserIds) { changes, db in
            let deleted = try store.apply(changes, in: db)
            if !deleted.isEmpty { db.afterNextTransaction { _ in deletedUsers.insert(deleted) } }
        }

        var router = Router(service: FavouritesAPI.service)
        FavouritesHandlers(store: store).register(into: &router)
        self.store = store
        self.housekeeper = Housekeeper(tasks: [.forgetKeptReplies(in: database), .checkpoint(database)], logger: logger)
        self.server = Server(
            configuration: .init(service: FavouritesAPI.service, endpoint: settings.endpoint, workers: settings.workers,
                                 rateLimit: settings.rateLimit, security: ServerSecurity(settings)),
            router: router, database: database, verifier: try TokenVerifier.forService(settings),
            callerCheck: deletedUsers.check, followers: [postFollower, userFollower], logger: logger)
    }

    /// Where clients connect (with the port a `:*` endpoint was given).
    public var endpoint: String { server.endpoint }

    public func answer(_ frames: [Data]) -> [Data] { server.answer(frames) }

    public var ops: [String] { server.ops }

    public func start() throws {
        try server.start()
        postFollower.start()
        userFollower.start()
        housekeeper.start()
    }

    public func stop() {
        postFollower.stop()
        userFollower.stop()
        server.stop()
        housekeeper.stop()
    }
}
