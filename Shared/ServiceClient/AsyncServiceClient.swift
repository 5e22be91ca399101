import Contracts
import Foundation
import Wire

/// A client of one service for many concurrent callers, in async code (the edge).
///
/// Each endpoint has one multiplexed DEALER socket (`DealerLink`) with the Lazy
/// Pirate's retries. A service run as replicas (a comma-separated endpoint list)
/// has a link per replica: a request's tries go round the replicas that answer and
/// keep up (`ReplicaSet`, kept current by a `ReplicaProbe` that asks each replica's
/// `<service>.ready` every second), so a replica that stops answering costs a
/// request one timeout, and one that comes back takes requests again. Requests that
/// change the file go to the owner, the first endpoint (`ReplicaSet.required(for:)`);
/// a caller may pin a request to the replica that holds its state (a live query's watch).
public final class AsyncServiceClient: Sendable {
    public let configuration: ServiceClient.Configuration
    public let replicas: ReplicaSet
    private let links: [any RequestLink]
    private let probe: ReplicaProbe?

    /// A reply as a caller gets it: frame 0 (the reply envelope) and the frames after
    /// it, and which replica answered.
    public struct RawReply: Sendable {
        public let frame0: Data
        public let attachments: [Data]
        public let replica: Int

        public var envelope: ReplyEnvelope.Decoded { ReplyEnvelope.decode(frame0) }

        init(_ frames: [Data], replica: Int) {
            frame0 = frames[0]
            attachments = Array(frames.dropFirst())
            self.replica = replica
        }
    }

    /// - Parameter link: makes the link to one endpoint, or nil for a libzmq DEALER's (`DealerLink`).
    public init(_ configuration: ServiceClient.Configuration, probeInterval: TimeInterval = 1,
                link: ((String) throws -> (any RequestLink)?)? = nil) throws {
        self.configuration = configuration
        let replicas = ReplicaSet(list: configuration.endpoint)
        self.replicas = replicas
        links = try replicas.endpoints.map { endpoint in
            try link?(endpoint) ?? DealerLink(configuration, endpoint: endpoint)
        }
        probe = replicas.count > 1 ? ReplicaProbe(configuration, replicas: replicas, interval: probeInterval) : nil
    }

    deinit { close() }

    /// Calls an op and decodes its reply body; a failed reply is thrown as the
    /// `ServiceError` it carries. `origin` is the end client's address (the edge's
    /// to relay); `replica`, the replica to ask (nil: any).
    public func call<Request, Response>(
        _ op: Op<Request, Response>, _ body: Request, token: String? = nil, origin: String? = nil, attachments: [Data] = [],
        id: String? = nil, replica: Int? = nil
    ) async throws -> (value: Response, attachments: [Data]) {
        let encoded: JSONValue
        do {
            encoded = try JSONValueEncoder().encode(body)
        } catch {
            throw ServiceError.invalidArgument(field: "", "the request body could not be encoded: \(error)")
        }
        let reply = try await callRaw(op: op.name, body: encoded, token: token, origin: origin, attachments: attachments, id: id,
                                      tries: op.effect == .fresh ? 1 : nil, replica: replica)
        switch reply.envelope.result {
        case .failure(let error):
            throw error
        case .success(let object):
            do {
                return (try JSONValueDecoder().decode(Response.self, from: .object(object)), reply.attachments)
            } catch {
                throw ServiceError(code: .internal, message: "\(op.name) replied with an unexpected body: \(error)")
            }
        }
    }

    /// Sends one request and returns its reply frames, undecoded (a caller that
    /// passes a body on as it is need not parse it). Throws `unavailable` when no
    /// try is answered.
    ///
    /// - Parameter replica: the replica every try goes to; nil goes round them (but
    ///   an op that changes a replicated service's file goes to its owner).
    public func callRaw(op: String, body: JSONValue, token: String? = nil, origin: String? = nil, attachments: [Data] = [],
                        id: String? = nil, tries: Int? = nil, replica: Int? = nil) async throws -> RawReply {
        try await withCheckedThrowingContinuation { continuation in
            callRaw(op: op, body: body, token: token, origin: origin, attachments: attachments, id: id, tries: tries,
                    replica: replica) { continuation.resume(with: $0) }
        }
    }

    /// `callRaw` for a caller that is not a task (an edge's event loop): `then` gets
    /// the reply, or why there is none, on the link's thread, so it should hand its
    /// work back to where it belongs rather than do it there.
    public func callRaw(op: String, body: JSONValue, token: String? = nil, origin: String? = nil, attachments: [Data] = [],
                        id: String? = nil, tries: Int? = nil, replica: Int? = nil,
                        then: @escaping @Sendable (Result<RawReply, any Error>) -> Void) {
        let pinned = replica ?? ReplicaSet.required(for: op)
        let requestID = id ?? Identifier.sortable()
        let frames = [RequestEnvelope.encode(id: requestID, op: op, token: token, origin: origin, body: body)] + attachments
        let tries = max(1, tries ?? configuration.tries)
        if replicas.count == 1 || pinned != nil {
            let replica = pinned ?? 0
            return links[replica].send(frames, id: requestID, tries: tries) { then($0.map { RawReply($0, replica: replica) }) }
        }
        // One try per replica in turn: the next try goes where an answer is likelier.
        tryReplicas(frames, id: requestID, triesLeft: tries, tried: [],
                    lastError: ServiceError.unavailable("\(configuration.service) did not answer"), then: then)
    }

    private func tryReplicas(_ frames: [Data], id: String, triesLeft: Int, tried: Set<Int>, lastError: any Error,
                             then: @escaping @Sendable (Result<RawReply, any Error>) -> Void) {
        guard triesLeft > 0 else { return then(.failure(lastError)) }
        let replica = replicas.pick(tried: tried)
        links[replica].send(frames, id: id, tries: 1) { [self] result in
            switch result {
            case .success(let frames):
                replicas.answered(replica)
                then(.success(RawReply(frames, replica: replica)))
            case .failure(let error as ServiceError) where error.code == .unavailable:
                replicas.failed(replica)
                tryReplicas(frames, id: id, triesLeft: triesLeft - 1, tried: tried.union([replica]), lastError: error, then: then)
            case .failure(let error):
                then(.failure(error))
            }
        }
    }

    /// Fails what is in flight with `unavailable` and closes the sockets.
    public func close() {
        probe?.stop()
        links.forEach { $0.close() }
    }
}
