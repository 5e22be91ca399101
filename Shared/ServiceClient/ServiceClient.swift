import Contracts
import Foundation
import Wire
import ZeroMQ

/// A client of one service, with the Lazy Pirate pattern of the ZeroMQ guide: each
/// try waits a bounded time, a try that times out is abandoned with its socket, and
/// the next try sends the same request id on a fresh socket, so the service can
/// answer a retried write from its log instead of applying it twice.
///
/// A service run as replicas is given as a comma-separated list of endpoints: reads
/// go round those that answer, and a try that goes unanswered moves on to the next
/// (`ReplicaSet`); writes go to the first.
///
/// Not thread-safe (it owns a socket): make one per thread.
public final class ServiceClient {
    public struct Configuration: Sendable {
        /// The service's name, for error messages.
        public var service: String
        /// One endpoint, or a service's replicas separated by commas.
        public var endpoint: String
        /// How long one try waits for the reply.
        public var timeout: TimeInterval
        public var tries: Int
        public var context: Context
        /// CURVE as a client of the service; nil for plaintext.
        public var curve: CurveRole?

        public init(service: String, endpoint: String, timeout: TimeInterval = 2.5, tries: Int = 3,
                    context: Context = .shared, curve: CurveRole? = nil) {
            self.service = service
            self.endpoint = endpoint
            self.timeout = timeout
            self.tries = tries
            self.context = context
            self.curve = curve
        }
    }

    public let configuration: Configuration
    public let replicas: ReplicaSet
    /// A socket per replica, connected when first used.
    private var sockets: [Int: Socket] = [:]

    public init(_ configuration: Configuration, replicas: ReplicaSet? = nil) {
        self.configuration = configuration
        self.replicas = replicas ?? ReplicaSet(list: configuration.endpoint)
    }

    public convenience init(service: String, endpoint: String, timeout: TimeInterval = 2.5, tries: Int = 3, curve: CurveRole? = nil) {
        self.init(Configuration(service: service, endpoint: endpoint, timeout: timeout, tries: tries, curve: curve))
    }

    deinit { close() }

    /// Calls an op and decodes its reply body; a failed reply is thrown as the
    /// `ServiceError` it carries.
    ///
    /// - Parameter origin: the end client's address, relayed by a front-end (the edge).
    public func call<Request, Response>(
        _ op: Op<Request, Response>, _ body: Request, token: String? = nil, origin: String? = nil, attachments: [Data] = [],
        id: String? = nil
    ) throws -> Response {
        try callWithAttachments(op, body, token: token, origin: origin, attachments: attachments, id: id).value
    }

    /// Calls an op whose reply has frames after frame 0 (avatars, images).
    public func callWithAttachments<Request, Response>(
        _ op: Op<Request, Response>, _ body: Request, token: String? = nil, origin: String? = nil, attachments: [Data] = [],
        id: String? = nil
    ) throws -> (value: Response, attachments: [Data]) {
        let encoded: JSONValue
        do {
            encoded = try JSONValueEncoder().encode(body)
        } catch {
            throw ServiceError.invalidArgument(field: "", "the request body could not be encoded: \(error)")
        }
        // A fresh op is never answered from the service's log, so a retry would run it
        // again: a second anonymous account, or a refresh token's second use (theft).
        let (reply, replyAttachments) = try callRaw(op: op.name, body: encoded, token: token, origin: origin,
                                                    attachments: attachments, id: id, tries: op.effect == .fresh ? 1 : nil)
        switch reply.result {
        case .failure(let error):
            throw error
        case .success(let object):
            do {
                return (try JSONValueDecoder().decode(Response.self, from: .object(object)), replyAttachments)
            } catch {
                throw ServiceError(code: .internal, message: "\(op.name) replied with an unexpected body: \(error)")
            }
        }
    }

    /// Sends one request and returns the decoded reply envelope and any frames after
    /// frame 0. Throws `unavailable` when no try is answered.
    ///
    /// - Parameters:
    ///   - origin: the end client's address, for a front-end (the edge) to relay.
    ///   - tries: this call's tries, instead of the configuration's.
    ///   - replica: the replica every try goes to; nil goes round them (but an op
    ///     that changes a replicated service's file goes to its owner).
    public func callRaw(op: String, body: JSONValue, token: String? = nil, origin: String? = nil, attachments: [Data] = [],
                        id: String? = nil, tries: Int? = nil,
                        replica: Int? = nil) throws -> (reply: ReplyEnvelope.Decoded, attachments: [Data]) {
        let requestID = id ?? Identifier.sortable()
        let frame0 = RequestEnvelope.encode(id: requestID, op: op, token: token, origin: origin, body: body)
        let tries = tries ?? configuration.tries
        guard let frames = try exchange([frame0] + attachments, tries: tries, replica: replica ?? ReplicaSet.required(for: op)) else {
            throw ServiceError.unavailable("\(configuration.service) did not answer",
                                           detail: "at \(configuration.endpoint) (\(tries) tries of \(configuration.timeout) s)")
        }
        let reply = ReplyEnvelope.decode(frames[0])
        if reply.id != requestID, case .success = reply.result {
            throw ServiceError(code: .internal, message: "\(op) was answered with another request's id")
        }
        return (reply, Array(frames.dropFirst()))
    }

    /// Sends frames as they are and waits for the reply frames, with the retry
    /// policy; nil when no try was answered. For tools and tests that send what a
    /// typed call cannot.
    public func exchange(_ frames: [Data], tries: Int? = nil, replica pinned: Int? = nil) throws -> [Data]? {
        var tried = Set<Int>()
        for _ in 0..<max(1, tries ?? configuration.tries) {
            let replica = pinned ?? replicas.pick(tried: tried)
            tried.insert(replica)
            let socket = try connectedSocket(replica)
            // A send that cannot be queued within the timeout counts as an unanswered try.
            guard try socket.send(frames) else {
                abandonSocket(replica)
                continue
            }
            var poller = Poller()
            poller.addReadable(socket)
            if try poller.poll(timeout: Int(configuration.timeout * 1000)) > 0,
               let reply = try socket.receiveMessage(wait: false) {
                replicas.answered(replica)
                return reply
            }
            // A REQ socket that got no reply cannot send again: start afresh.
            abandonSocket(replica)
        }
        return nil
    }

    /// Closes the sockets; the next call connects again.
    public func close() {
        for replica in Array(sockets.keys) { sockets.removeValue(forKey: replica)?.close() }
    }

    private func connectedSocket(_ replica: Int) throws -> Socket {
        if let socket = sockets[replica] { return socket }
        let socket = try configuration.context.makeSocket(.request)
        try socket.set(.linger(milliseconds: 0))
        try socket.set(.maxMessageSize(bytes: Int64(Limits.messageBytes)))
        try socket.set(.sendTimeout(milliseconds: Int32(clamping: Int((configuration.timeout * 1000).rounded(.up)))))
        try socket.secure(configuration.curve)
        try socket.connect(replicas.endpoints[replica])
        sockets[replica] = socket
        return socket
    }

    /// Leaves the replica out for a while and drops its socket.
    private func abandonSocket(_ replica: Int) {
        replicas.failed(replica)
        sockets.removeValue(forKey: replica)?.close()
    }
}
