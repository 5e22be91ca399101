import Contracts
import Foundation
import ZeroMQ

/// A subscriber to a service's event socket.
///
/// Services decide each subscription themselves (see the protocol's events
/// section): a service's key may take any topic; any other key a user's own topic,
/// shown with that user's access token. A plain SUB socket cannot send a token (it
/// would also filter out the events, whose topic lacks it), so this is an XSUB
/// socket that sends each subscription as `topic`, or `topic` `\n` `token`, and
/// leaves the filtering to the service.
///
/// Not thread-safe (it owns a socket): use it on one thread.
public final class EventSubscriber {
    public struct Event: Sendable {
        public let topic: String
        public let body: Data
    }

    private let socket: Socket

    /// - Parameter endpoint: the service's events endpoint, or its replicas' separated by commas.
    public init(endpoint: String, curve: CurveRole?, context: Context = .shared) throws {
        socket = try context.makeSocket(.extendedSubscribe)
        try socket.set(.linger(milliseconds: 0))
        try socket.set(.maxMessageSize(bytes: 8 * 1024 * 1024))
        try socket.secure(curve)
        // A service run as replicas publishes from each: one socket hears them all,
        // and a subscription goes to every one.
        for replica in ServiceEndpoints.list(endpoint) {
            try socket.connect(replica)
        }
    }

    deinit { socket.close() }

    /// Asks for `topic`'s events; with `token` for a user's own topic. The service
    /// drops a subscription it does not admit, so a refused one simply gets nothing.
    /// Subscriptions are sent again after a reconnection.
    public func subscribe(_ topic: String, token: String? = nil) throws {
        var message = Data([1])
        message.append(contentsOf: topic.utf8)
        if let token { message.append(contentsOf: "\n\(token)".utf8) }
        try socket.send(message)
    }

    /// The next event, waiting at most `timeout` seconds (nil: without limit).
    public func next(timeout: TimeInterval? = nil) throws -> Event? {
        var poller = Poller()
        poller.addReadable(socket)
        guard try poller.poll(timeout: timeout.map { Int($0 * 1000) } ?? -1) > 0 else { return nil }
        guard let frames = try socket.receiveMessage(wait: false), frames.count == 2 else { return nil }
        return Event(topic: String(decoding: frames[0], as: UTF8.self), body: frames[1])
    }

    public func close() { socket.close() }
}
