import Contracts
import Foundation
import Logging
import ServiceClient
import Synchronization
import Wire
import ZeroMQ

/// Who may subscribe to what on a service's event socket.
///
/// Services (and the edge) may subscribe to any topic: they follow feeds and fan
/// events out to users. Everyone else admitted (an operator's `here`) may take the
/// open topics (change notices, which carry only a seq) and a user's own topics
/// with that user's access token.
public struct SubscriptionPolicy: Sendable {
    /// Topics any admitted peer may subscribe to.
    public var openTopics: Set<String>
    /// Prefixes of per-user topics (`chat.message/`): the prefix, a user id, `/`.
    public var userTopicPrefixes: [String]
    /// Checks the tokens of per-user subscriptions; nil refuses them all.
    public var verifier: TokenVerifier?

    public init(openTopics: Set<String> = [], userTopicPrefixes: [String] = [], verifier: TokenVerifier? = nil) {
        self.openTopics = openTopics
        self.userTopicPrefixes = userTopicPrefixes
        self.verifier = verifier
    }

    /// A feed's change notices (`auth.changed/`), open to every admitted peer.
    public static func changeNotices(of service: String) -> SubscriptionPolicy {
        SubscriptionPolicy(openTopics: [ChangeNotice.topic(service: service)])
    }

    /// Whether a peer of `role` may subscribe to `topic`, showing `token`.
    func admits(topic: String, token: String?, role: PeerRole) -> Bool {
        if role == .service || openTopics.contains(topic) { return true }
        guard let prefix = userTopicPrefixes.first(where: { topic.hasPrefix($0) }),
              let token, let verifier else { return false }
        let rest = topic.dropFirst(prefix.count)
        guard rest.hasSuffix("/") else { return false }
        let userId = String(rest.dropLast())
        guard let caller = try? verifier.verify(token) else { return false }
        return caller.userID == userId
    }

    /// A subscription message's topic and token: `topic`, or `topic` `\n` `token`.
    static func parse(_ subscription: Data) -> (topic: String, token: String?)? {
        guard let text = String(bytes: subscription, encoding: .utf8) else { return nil }
        let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        return (String(parts[0]), parts.count == 2 ? String(parts[1]) : nil)
    }
}

/// A service's event socket: an XPUB owned by a thread of its own, which forwards
/// what the service publishes and decides each subscription by `SubscriptionPolicy`
/// (libzmq's manual subscription mode: a subscription takes effect only when the
/// thread applies it).
///
/// Any thread may publish: messages go to the event thread through one inproc PUSH
/// socket, fenced by a mutex, so they leave in the order they were published.
public final class EventPublisher: Sendable {
    public let endpoint: String
    private let inbox: Mutex<Socket?>
    private let thread: ServiceThread
    private static let stopSignal = Data("stop".utf8)
    /// A subscription message is a flag byte, a topic and perhaps a token.
    private static let subscriptionLimits = MessageLimits(maxFrames: 1, maxBytes: 8 * 1024)

    public init(endpoint: String, security: ServerSecurity? = nil, policy: SubscriptionPolicy,
                logger: Logger, context: Context = .shared) throws {
        let inboxEndpoint = "inproc://events-\(UUID().uuidString)"
        let bound = Mutex<Result<String, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        thread = ServiceThread(name: "events") {
            let publisher: Socket, inbox: Socket
            do {
                publisher = try context.makeSocket(.extendedPublish)
                try publisher.set(.linger(milliseconds: 200))
                try publisher.set(.sendHighWaterMark(messages: 100_000))
                try publisher.set(.maxMessageSize(bytes: Int64(Wire.Limits.messageBytes)))
                try publisher.set(.extendedPublishManual(true))
                try ServerSecurity.secure(publisher, with: security, endpoint: endpoint, in: context)
                try publisher.bind(endpoint)
                inbox = try context.makeSocket(.pull)
                try inbox.set(.linger(milliseconds: 0))
                try inbox.set(.receiveHighWaterMark(messages: 100_000))
                try inbox.bind(inboxEndpoint)
            } catch {
                bound.withLock { $0 = .failure(error) }
                ready.signal()
                return
            }
            bound.withLock { $0 = .success(publisher.lastEndpoint) }
            ready.signal()
            Self.run(publisher: publisher, inbox: inbox, security: security, policy: policy, logger: logger)
            publisher.close()
            inbox.close()
        }
        ready.wait()
        switch bound.withLock({ $0! }) {
        case .failure(let error):
            thread.join()
            throw error
        case .success(let endpoint):
            self.endpoint = endpoint
        }
        let push = try context.makeSocket(.push)
        try push.set(.linger(milliseconds: 1000))
        try push.set(.sendHighWaterMark(messages: 100_000))
        try push.connect(inboxEndpoint)
        inbox = Mutex(push)
    }

    /// Sends a topic frame and a body frame; dropped when no subscriber keeps up.
    public func publish(topic: String, body: Data) {
        inbox.withLock { socket in
            _ = try? socket?.send([Data(topic.utf8), body], wait: false)
        }
    }

    /// Sends what was published before, then closes the socket.
    public func close() {
        let signalled = inbox.withLock { socket -> Bool in
            guard let push = socket else { return false }
            socket = nil
            let sent = (try? push.send([Self.stopSignal])) ?? false
            push.close()
            return sent
        }
        if signalled { thread.join() }
    }

    private static func run(publisher: Socket, inbox: Socket, security: ServerSecurity?, policy: SubscriptionPolicy,
                            logger: Logger) {
        var poller = Poller()
        let inboxIndex = poller.addReadable(inbox)
        let subscriptionsIndex = poller.addReadable(publisher)
        while true {
            do {
                try poller.poll(timeout: -1)
                if poller.isReadable(inboxIndex) {
                    while let frames = try inbox.receiveMessage(wait: false) {
                        if frames == [stopSignal] { return }
                        try publisher.send(frames, wait: false)
                    }
                }
                if poller.isReadable(subscriptionsIndex) {
                    while let message = try publisher.receive(wait: false, limits: subscriptionLimits) {
                        try decide(message, on: publisher, security: security, policy: policy, logger: logger)
                    }
                }
            } catch {
                logger.error("the event socket failed", metadata: ["error": "\(error)"])
                if error.isContextTerminated { return }
            }
        }
    }

    /// Applies a subscription or unsubscription the policy admits, to the peer that
    /// sent it; anything else is dropped (the peer simply gets no events).
    private static func decide(_ message: ReceivedMessage, on publisher: Socket, security: ServerSecurity?,
                               policy: SubscriptionPolicy, logger: Logger) throws(ZMQError) {
        guard !message.truncated, let frame = message.frames.first, let flag = frame.first, flag <= 1,
              let (topic, token) = SubscriptionPolicy.parse(frame.dropFirst()) else { return }
        let topicBytes = Data(topic.utf8)
        if flag == 0 {
            // Leaving needs no permission; a topic never granted matches nothing.
            try publisher.set(.unsubscribe(topicBytes))
            return
        }
        // Plaintext binds only where nothing but this machine reaches: every peer is trusted.
        let role = security?.role(ofPeerKey: message.peerKey) ?? .service
        guard policy.admits(topic: topic, token: token, role: role) else {
            logger.notice("refused a subscription", metadata: ["topic": "\(topic)", "peer": "\(message.peerKey ?? "-")"])
            return
        }
        logger.debug("admitted a subscription", metadata: ["topic": "\(topic)", "peer": "\(message.peerKey ?? "-")"])
        try publisher.set(.subscribe(topicBytes))
    }
}

/// A service's event socket as its handlers see it: opened when the service starts,
/// closed when it stops, and a quiet no-op outside that time.
public final class EventChannel: Sendable {
    private let publisher = Mutex<EventPublisher?>(nil)
    private let policy: SubscriptionPolicy
    private let logger: Logger

    public init(policy: SubscriptionPolicy, logger: Logger) {
        self.policy = policy
        self.logger = logger
    }

    public func open(endpoint: String, security: ServerSecurity? = nil) throws {
        let opened = try EventPublisher(endpoint: endpoint, security: security, policy: policy, logger: logger)
        publisher.withLock { $0 = opened }
    }

    public func close() {
        let closing = publisher.withLock { publisher -> EventPublisher? in
            defer { publisher = nil }
            return publisher
        }
        closing?.close()
    }

    /// Publishes `value` as JSON on `topic`; nothing when the channel is closed.
    public func publish(topic: String, _ value: some Encodable) {
        guard let publisher = publisher.withLock({ $0 }), let body = try? JSONValueEncoder().encodeData(value) else { return }
        publisher.publish(topic: topic, body: body)
    }

    /// Publishes a body that is JSON already (written by a hot path's own writer).
    public func publish(topic: String, json: [UInt8]) {
        publisher.withLock { $0 }?.publish(topic: topic, body: Data(json))
    }
}
