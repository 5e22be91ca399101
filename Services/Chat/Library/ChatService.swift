import Contracts
import Crypto
import Foundation
import Logging
import Push
import ServiceClient
import ServiceKit

/// The chat service: conversations of two, their messages and read marks, blocks, and
/// the devices that get pushes, in `<data dir>/chat.sqlite`; follows `auth.changes` for
/// who may receive messages and their names; publishes each new message on
/// `chat.message/<userId>/` and pushes it to the recipient's devices.
public final class ChatService: AssembledService {
    public struct Options: Sendable {
        /// The wait before a push refused for now is tried again (5 s; less in tests).
        public var pushRetryDelay: TimeInterval = 5
        public init() {}
    }

    public let assembly: ServiceAssembly
    let store: ChatStore
    let userFollower: ChangeFollower<UserChange>
    let pushSender: PushSender

    public var settings: ServiceSettings { assembly.settings }

    public init(settings: ServiceSettings, options: Options = Options(), logger: Logger) throws {
        let base = try ServiceBase(settings: settings, logger: logger) { ChatSchema.register(in: &$0) }
        let store = ChatStore(database: base.database)
        userFollower = try base.followUsers(held: store.heldUserIds) { changes, db in try store.apply(changes, in: db) }
        let verifier = try TokenVerifier.forService(settings)
        let events = EventChannel(policy: SubscriptionPolicy(userTopicPrefixes: [ChatAPI.messageTopicPrefix], verifier: verifier),
                                  logger: logger)
        let push = try PushSettings(environment: settings.environment)
        let vapid = VAPIDKey(privateKey: try P256.Signing.PrivateKey(rawRepresentation: store.vapidPrivateKey {
            P256.Signing.PrivateKey().rawRepresentation
        }), subject: push.vapidSubject)
        let endedSessions = Self.endedSessions(settings: settings)
        let sender = PushSender(store: store, settings: push, vapid: vapid, retryDelay: options.pushRetryDelay,
                                endedSessions: endedSessions, logger: logger)
        var router = Router(service: ChatAPI.service)
        ChatHandlers(store: store, events: events, pushSettings: push, vapidPublicKey: vapid.publicKey,
                     endedSessions: endedSessions, wakePushes: { [weak sender] in sender?.wake() }).register(into: &router)
        base.requireConfirmedEmail(for: [ChatAPI.send.name], in: &router)
        self.store = store
        self.pushSender = sender
        assembly = try ServiceAssembly(base, service: ChatAPI.service, router: router, followers: [userFollower],
                                       publishing: .events(events), verifier: verifier,
                                       healthDetails: { $0.push = sender.queueStatus })
    }

    /// Serves, then sends pushes.
    public func start() throws {
        try assembly.start()
        pushSender.start()
    }

    /// Stops sending (pushes under way finish first), then serving.
    public func stop() {
        pushSender.stop()
        assembly.stop()
    }

    /// Asks auth which sessions ended, on a client of its own each time (the callers
    /// are the sender's thread and the workers; a client is one thread's).
    static func endedSessions(settings: ServiceSettings) -> @Sendable ([String]) throws -> [String] {
        let auth = settings.endpoints(of: AuthAPI.service).requests
        let curve = try? settings.clientCurve(of: AuthAPI.service)
        return { sessions in
            guard !sessions.isEmpty else { return [] }
            let client = ServiceClient(service: AuthAPI.service, endpoint: auth, timeout: 2, tries: 1, curve: curve ?? nil)
            defer { client.close() }
            return try client.call(AuthAPI.sessionsEnded, SessionsRequest(sessionIds: sessions)).ended
        }
    }
}
