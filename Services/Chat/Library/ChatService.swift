import Contracts
import Foundation
import Logging
import ServiceKit

/// The chat service: conversations of two, their messages and read marks, and
/// blocks, in `<data dir>/chat.sqlite`; follows `auth.changes` for who may receive
/// messages; publishes each new message on `chat.message/<userId>/`.
public final class ChatService: AssembledService {
    public let assembly: ServiceAssembly
    let store: ChatStore
    let userFollower: ChangeFollower<UserChange>

    public var settings: ServiceSettings { assembly.settings }

    public init(settings: ServiceSettings, logger: Logger) throws {
        let base = try ServiceBase(settings: settings, logger: logger) { ChatSchema.register(in: &$0) }
        let store = ChatStore(database: base.database)
        userFollower = try base.followUsers(held: store.heldUserIds) { changes, db in try store.apply(changes, in: db) }
        let verifier = try TokenVerifier.forService(settings)
        let events = EventChannel(policy: SubscriptionPolicy(userTopicPrefixes: [ChatAPI.messageTopicPrefix], verifier: verifier),
                                  logger: logger)
        var router = Router(service: ChatAPI.service)
        ChatHandlers(store: store, events: events).register(into: &router)
        base.requireConfirmedEmail(for: [ChatAPI.send.name], in: &router)
        self.store = store
        assembly = try ServiceAssembly(base, service: ChatAPI.service, router: router, followers: [userFollower],
                                       publishing: .events(events), verifier: verifier)
    }
}
