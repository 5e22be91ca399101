import Foundation
import HummingbirdWebSocket
import Logging
import NIOWebSocket
import ServiceKit
import Synchronization
import Wire

/// One `GET /v1/events` WebSocket (EDGE.md): the client sends its access token
/// first, `{"type":"auth","token":"…"}`, within 10 s, and again before it expires;
/// the server answers `{"type":"ready","userId":"…"}` and from then on sends the
/// user's events. Closes with 4401 for a missing, failed or expired token, 4429 for
/// a user over their number of sockets, 1008 for a reader too slow to keep up, 1003
/// for binary frames and 1007 for text that is not a JSON object.
struct EventSocket: Sendable {
    let hub: EventHub
    let tokens: TokenCheck
    let logger: Logger

    /// Why a socket closes, and how it says so.
    struct Closing: Sendable {
        var code: WebSocketErrorCode
        var reason: String

        static func unauthenticated(_ reason: String) -> Closing { Closing(code: .unknown(4401), reason: reason) }
        static let tooManySockets = Closing(code: .unknown(4429), reason: "too many sockets for this user")
        static let slowReader = Closing(code: .policyViolation, reason: "too many events unread")
        static let silent = Closing(code: .goingAway, reason: "no answer to pings")
        static let binary = Closing(code: .unacceptableData, reason: "send text messages of JSON")
        static func notJSON(_ reason: String) -> Closing { Closing(code: .dataInconsistentWithMessage, reason: reason) }
    }

    /// What the socket knows of its user, once a token has named them.
    final class Session: Sendable {
        struct State {
            var userId: String?
            var socketID: Int?
        }

        let state = Mutex(State())
    }

    /// Serves one socket until it closes; `caller` when the upgrade carried a token
    /// (the socket is then signed in at once). `outbox` writes to the socket's channel
    /// (`outbox(writer:endReading:)`).
    ///
    /// One task per socket, Hummingbird's: it reads the client's messages until the
    /// socket ends or something closes it (the hub's sweep of deadlines, a backlog
    /// that overflowed), then closes it with the reason. Events are written by the
    /// hub's threads, not by a task of the socket's.
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, caller: Caller? = nil,
             outbox: EventHub.Outbox) async {
        let session = Session()
        hub.watch(outbox)
        defer {
            hub.unwatch(outbox)
            let (userId, socketID) = session.state.withLock { ($0.userId, $0.socketID) }
            if let userId, let socketID { hub.unregister(socketID, userId: userId) }
            outbox.close(nil)
        }
        var closing: Closing?
        if let caller {
            closing = await signIn(caller, outbox: outbox, session: session, outbound: outbound)
        }
        if closing == nil {
            closing = await read(inbound, outbound: outbound, outbox: outbox, session: session)
        }
        outbox.close(closing, endingReading: false)
        if let closing = outbox.closing {
            logger.debug("closing a socket", metadata: ["code": "\(closing.code)", "reason": "\(closing.reason)"])
            try? await outbound.close(closing.code, reason: closing.reason)
        }
    }

    /// A new socket's outbox: its first token due within `EdgeSettings.socketAuthTimeout`.
    static func outbox(writer: @escaping EventHub.Outbox.Writer, endReading: @escaping @Sendable () -> Void) -> EventHub.Outbox {
        EventHub.Outbox(deadline: Date().addingTimeInterval(EdgeSettings.socketAuthTimeout), writer: writer, endReading: endReading)
    }

    /// The client's messages: tokens, first and renewed. Ends with the socket.
    private func read(_ inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter, outbox: EventHub.Outbox,
                      session: Session) async -> Closing? {
        do {
            for try await message in inbound.messages(maxSize: 64 * 1024) {
                guard case .text(let text) = message else { return .binary }
                guard case .object(let object)? = try? JSONParser.parse(Data(text.utf8)) else {
                    return .notJSON("a message must be a JSON object")
                }
                guard case .string(let type)? = object["type"] else { return .notJSON("a message needs a type") }
                switch type {
                case "auth":
                    guard case .string(let token)? = object["token"] else { return .unauthenticated("auth needs a token") }
                    if let closing = await authenticate(token, outbox: outbox, session: session, outbound: outbound) { return closing }
                default:
                    try await outbound.write(.text(#"{"type":"error","code":"bad_request","detail":"unknown message type"}"#))
                }
            }
        } catch {
            logger.debug("socket read ended", metadata: ["error": "\(error)"])
        }
        return nil
    }

    /// Checks a token: the first signs the socket in (and answers `ready`); a later
    /// one must be the same user's and moves the deadline to its expiry.
    private func authenticate(_ token: String, outbox: EventHub.Outbox, session: Session,
                              outbound: WebSocketOutboundWriter) async -> Closing? {
        let caller: Caller
        do {
            caller = try await tokens.verify(token)
        } catch {
            return .unauthenticated((error as? ServiceError)?.message ?? "the token is not valid")
        }
        return await signIn(caller, outbox: outbox, session: session, outbound: outbound)
    }

    /// Signs the socket in as `caller`'s user (answering `ready`), or, when it is
    /// already, moves its deadline to the renewed token's expiry.
    private func signIn(_ caller: Caller, outbox: EventHub.Outbox, session: Session,
                        outbound: WebSocketOutboundWriter) async -> Closing? {
        let known = session.state.withLock { $0.userId }
        if let known {
            guard known == caller.userID else { return .unauthenticated("a socket belongs to one user") }
            outbox.signedIn(until: caller.expiresAt)
            return nil
        }
        let ready = JSONWriter.data(.object(["type": .string("ready"), "userId": .string(caller.userID),
                                             "expiresAt": .string(Timestamp.format(caller.expiresAt))]))
        guard let socketID = hub.register(outbox, userId: caller.userID, greeting: String(decoding: ready, as: UTF8.self)) else {
            return .tooManySockets
        }
        session.state.withLock { state in
            state.userId = caller.userID
            state.socketID = socketID
        }
        outbox.signedIn(until: caller.expiresAt)
        return nil
    }
}

/// Verifies access tokens with auth's keys, off Swift's cooperative threads (the
/// first check of a key fetches it from auth, which blocks).
struct TokenCheck: Sendable {
    let verifier: TokenVerifier

    func verify(_ token: String) async throws -> Caller {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Result { try verifier.verify(token) })
            }
        }
    }
}
