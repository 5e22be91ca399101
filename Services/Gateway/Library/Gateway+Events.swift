import Contracts
import Foundation
import ServiceClient
import ZeroMQ

extension Gateway {
    /// Hands each of the signed-in user's events on `service`'s event socket to
    /// `handle`, until it returns false. `subscribed` runs once the first subscription
    /// is made (what must not start before it: opening a watch); `idle`, about every
    /// quarter second, may end it too by returning false.
    ///
    /// The service lets a subscription through only with the user's access token,
    /// checked when it arrives. Before that token expires a second socket subscribes
    /// with a fresh one, both are read for a few seconds, and the old one closes; an
    /// event both delivered is handed on once.
    public func watchOwnEvents(service: String, topic: (String) -> String, subscribed: () throws -> Void = {},
                               idle: () throws -> Bool = { true }, handle: (Data) throws -> Bool) throws {
        guard let endpoint = ServiceEndpoints.resolve(service, environment: environment).events else {
            throw GatewayError("\(service) has no events endpoint (\(ServiceEndpoints.eventsVariable(service)))")
        }
        func subscribe() throws -> (EventSubscriber, expires: Date) {
            let session = try signedInSession(lasting: Self.tokenRenewal)
            let subscriber = try EventSubscriber(endpoint: endpoint, curve: try curve(of: service))
            try subscriber.subscribe(topic(session.userId), token: session.accessToken)
            return (subscriber, session.expiresAt)
        }
        var (current, expires) = try subscribe()
        var retiring: (subscriber: EventSubscriber, until: Date)?
        var seen = RecentEvents(capacity: 1_000)
        defer { current.close(); retiring?.subscriber.close() }
        try subscribed()
        while try idle() {
            if expires.timeIntervalSinceNow < Self.tokenRenewal {
                retiring?.subscriber.close()
                retiring = (current, Date().addingTimeInterval(3))
                (current, expires) = try subscribe()
            }
            if let (old, until) = retiring, until < Date() {
                old.close()
                retiring = nil
            }
            for subscriber in [current, retiring?.subscriber].compactMap({ $0 }) {
                if let event = try subscriber.next(timeout: 0.25), seen.insert(event.body) {
                    guard try handle(event.body) else { return }
                }
            }
        }
    }

    /// How long before its token expires a subscription is renewed.
    static let tokenRenewal: TimeInterval = 120
}

/// The bodies of the last events handed on, to hand each on once.
struct RecentEvents {
    private var order: [Data] = []
    private var members = Set<Data>()
    let capacity: Int

    init(capacity: Int) { self.capacity = capacity }

    /// False when `body` was seen among the last `capacity`.
    mutating func insert(_ body: Data) -> Bool {
        guard members.insert(body).inserted else { return false }
        order.append(body)
        if order.count > capacity { members.remove(order.removeFirst()) }
        return true
    }
}
