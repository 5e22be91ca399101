import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Wire

/// The chat service: conversations of two, their messages and read marks, and
/// blocks, in `<data dir>/chat.sqlite`; follows `auth.changes` for who may receive
/// messages; publishes each new message on `chat.message/<userId>/`.
public final class ChatService: RunnableService {
    public let settings: ServiceSettings
    let store: ChatStore
    let userFollower: ChangeFollower<UserChange>
    private let events: EventChannel
    private let server: Server
    private let housekeeper: Housekeeper

    public init(settings: ServiceSettings, logger: Logger) throws {
        self.settings = settings
        let database = try ServiceDatabase(path: settings.databasePath, durability: .normal, maxBytes: settings.databaseMaxBytes) { migrator in
            ChatSchema.register(in: &migrator)
        }
        let store = ChatStore(database: database)
        let deletedUsers = DeletedUsers(try store.deletedUsers())
        userFollower = try ChangeFollower.auth(settings: settings, database: database, logger: logger, held: store.heldUserIds) { changes, db in
            let deleted = try store.apply(changes, in: db)
            if !deleted.isEmpty { db.afterNextTransaction { _ in deletedUsers.insert(deleted) } }
        }
        let verifier = try TokenVerifier.forService(settings)
        let events = EventChannel(policy: SubscriptionPolicy(userTopicPrefixes: [ChatAPI.messageTopicPrefix], verifier: verifier),
                                  logger: logger)
        var router = Router(service: ChatAPI.service)
        ChatHandlers(store: store, events: events).register(into: &router)
        self.events = events
        self.store = store
        self.housekeeper = Housekeeper(tasks: [.forgetKeptReplies(in: database), .checkpoint(database)], logger: logger)
        self.server = Server(
            configuration: .init(service: ChatAPI.service, endpoint: settings.endpoint, workers: settings.workers,
                                 rateLimit: settings.rateLimit, security: ServerSecurity(settings)),
            router: router, database: database, verifier: verifier,
            callerCheck: deletedUsers.check, followers: [userFollower], logger: logger)
    }

    /// Where clients connect (with the port a `:*` endpoint was given).
    public var endpoint: String { server.endpoint }

    public func answer(_ frames: [Data]) -> [Data] { server.answer(frames) }

    public var ops: [String] { server.ops }

    public func start() throws {
        if let endpoint = settings.eventsEndpoint { try events.open(endpoint: endpoint, security: ServerSecurity(settings)) }
        try server.start()
        userFollower.start()
        housekeeper.start()
    }

    public func stop() {
        userFollower.stop()
        server.stop()
        housekeeper.stop()
        events.close()
    }
}
