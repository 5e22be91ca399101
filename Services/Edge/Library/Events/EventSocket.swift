import Contracts
import Foundation
import Logging
import NIOCore
import NIOWebSocket
import ServiceCore
import Wire

/// A user a token signed in, with the token: a socket's watches call geo with it.
struct SocketSignIn: Sendable {
    let caller: Caller
    let token: String
}

/// What every `GET /v1/events` WebSocket (EDGE.md) shares: the hub that fans events
/// out, the token check, the log. The client sends its access token first,
/// `{"type":"auth","token":"…"}`, within 10 s, and again before it expires; the
/// server answers `{"type":"ready","userId":"…"}` and from then on sends the user's
/// events. Closes with 4401 for a missing, failed or expired token, 4429 for a user
/// over their number of sockets, 1008 for a reader too slow to keep up, 1003 for
/// binary frames, 1007 for text that is not UTF-8 or not a JSON object, 1002 for
/// frames RFC 6455 forbids, and 1001 when the client no longer answers pings or the
/// edge shuts down.
struct EventSocket: Sendable {
    let hub: EventHub
    let tokens: TokenCheck
    let logger: Logger

    /// The largest message a client may send, in one frame or several.
    static let maxMessageBytes = 64 * 1024
    /// How long a close sent waits for the client's close before the connection goes.
    static let closeTimeout = TimeAmount.seconds(5)
    /// Messages that may arrive while a token is being checked; more close the socket.
    static let maxWaitingMessages = 16

    /// Why a socket closes, and how it says so.
    struct Closing: Sendable {
        var code: WebSocketErrorCode
        var reason: String

        static func unauthenticated(_ reason: String) -> Closing { Closing(code: .unknown(4401), reason: reason) }
        static let tooManySockets = Closing(code: .unknown(4429), reason: "too many sockets for this user")
        static let slowReader = Closing(code: .policyViolation, reason: "too many events unread")
        static let tooManyWaiting = Closing(code: .policyViolation, reason: "too many messages while a token is checked")
        static let silent = Closing(code: .goingAway, reason: "no answer to pings")
        static let shuttingDown = Closing(code: .goingAway, reason: "the edge is shutting down")
        static let binary = Closing(code: .unacceptableData, reason: "send text messages of JSON")
        static let tooLarge = Closing(code: .messageTooLarge, reason: "a message may be at most 64 KB")
        static func notJSON(_ reason: String) -> Closing { Closing(code: .dataInconsistentWithMessage, reason: reason) }
        static func protocolError(_ reason: String) -> Closing { Closing(code: .protocolError, reason: reason) }
    }

    /// Asks a socket's handler, from any thread, to close the socket with its
    /// outbox's reason (a deadline passed, a backlog overflowed).
    struct CloseRequested: Sendable {}

    /// The handlers of a socket just upgraded on `channel`, signed in at once when
    /// the upgrade carried a token (`caller`), naming places in `language` where a
    /// watch does not say. Called on the channel's event loop.
    func handler(on channel: any Channel, caller: SocketSignIn?, language: LanguageTag?) -> EventSocketHandler {
        // Events go to the channel from whichever thread has them, through the frame encoder.
        let outbox = EventHub.Outbox(
            deadline: Date().addingTimeInterval(EdgeSettings.socketAuthTimeout),
            writer: { message, written in
                let frame = switch message {
                case .text(let text): WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text))
                case .ping: WebSocketFrame(fin: true, opcode: .ping, data: channel.allocator.buffer(capacity: 0))
                }
                channel.writeAndFlush(frame).whenComplete { _ in written() }
            },
            requestClose: { channel.pipeline.fireUserInboundEventTriggered(CloseRequested()) })
        return EventSocketHandler(socket: self, outbox: outbox, caller: caller, language: language)
    }
}

/// One events WebSocket, after NIO's frame decoder: the client's frames and
/// messages in, close frames and answers out; events are written by the hub's
/// threads through the socket's outbox.
///
/// Channel handlers rather than a task: a socket mostly waits, and a task per
/// socket (Hummingbird's connection task running swift-websocket's handler) holds
/// its suspended frames, some 17 KB, for as long as it waits. Everything here runs
/// on the channel's event loop.
final class EventSocketHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let socket: EventSocket
    private let outbox: EventHub.Outbox
    /// The upgrade's caller, signed in once the handler is in the pipeline.
    private var upgradeCaller: SocketSignIn?
    /// The upgrade's `Accept-Language`: the `lang` of a watch that gives none.
    private let language: LanguageTag?
    private var context: ChannelHandlerContext?
    /// Once a token has named the socket's user, and the hub's number for the socket.
    private var signedIn: (userId: String, socketID: Int)?
    /// A text message arriving in fragments.
    private var partial: ByteBuffer?
    /// A token check is under way: later messages wait in `waiting`, in order.
    private var checking = false
    private var waiting: [String] = []
    /// Set once this side has sent its close frame.
    private var closeSent = false
    private var closeTimer: Scheduled<Void>?

    init(socket: EventSocket, outbox: EventHub.Outbox, caller: SocketSignIn?, language: LanguageTag?) {
        self.socket = socket
        self.outbox = outbox
        upgradeCaller = caller
        self.language = language
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        socket.hub.watch(outbox)
        if let caller = upgradeCaller {
            upgradeCaller = nil
            signIn(caller)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        closeTimer?.cancel()
        socket.hub.unwatch(outbox)
        if let signedIn {
            socket.hub.unregister(signedIn.socketID, userId: signedIn.userId)
            if let watches = socket.hub.watches {
                let socketID = signedIn.socketID
                Task { await watches.socketClosed(socketID) }
            }
        }
        signedIn = nil
        outbox.close(nil)
        self.context = nil
        context.fireChannelInactive()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case is EventSocket.CloseRequested: if let closing = outbox.closing { close(closing) }
        case is ChannelShouldQuiesceEvent: close(.shuttingDown)
        default: context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        socket.logger.debug("socket error", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        outbox.heard()
        // After this side's close only the client's close matters.
        guard !closeSent || frame.opcode == .connectionClose else { return }
        guard frame.maskKey != nil else { return close(.protocolError("a client's frames must be masked")) }
        guard frame.reservedBits.isEmpty else { return close(.protocolError("no extension is in use: reserved bits must be 0")) }
        switch frame.opcode {
        case .ping:
            let pong = WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)
            context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
        case .pong:
            break
        case .connectionClose:
            closed(by: frame, context: context)
        case .binary:
            close(.binary)
        case .text:
            guard partial == nil else { return close(.protocolError("a message began before the last one ended")) }
            if frame.fin { received(frame.unmaskedData) } else { partial = frame.unmaskedData }
        case .continuation:
            guard var message = partial else { return close(.protocolError("a continuation frame with no message to continue")) }
            var data = frame.unmaskedData
            guard message.readableBytes + data.readableBytes <= EventSocket.maxMessageBytes else { return close(.tooLarge) }
            message.writeBuffer(&data)
            if frame.fin {
                partial = nil
                received(message)
            } else {
                partial = message
            }
        default:
            close(.protocolError("unknown opcode"))
        }
    }

    /// The client's close: answered with its code (RFC 6455 §5.5.1) unless this side
    /// closed first, then the connection goes.
    private func closed(by frame: WebSocketFrame, context: ChannelHandlerContext) {
        outbox.close(nil)
        guard !closeSent else { return context.close(promise: nil) }
        closeSent = true
        var data = frame.unmaskedData
        var answer = context.channel.allocator.buffer(capacity: 2)
        if let code = data.readWebSocketErrorCode() { answer.write(webSocketErrorCode: code) }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: answer)))
            .whenComplete { _ in channel.close(promise: nil) }
    }

    /// A whole message: its text when it is UTF-8, handled now or, while a token is
    /// being checked, after it.
    private func received(_ message: ByteBuffer) {
        guard let text = String(validating: message.readableBytesView, as: UTF8.self) else {
            return close(.notJSON("a message must be UTF-8 text"))
        }
        guard !checking else {
            guard waiting.count < EventSocket.maxWaitingMessages else { return close(.tooManyWaiting) }
            waiting.append(text)
            return
        }
        handle(text)
    }

    /// The client's messages: tokens, first and renewed.
    private func handle(_ text: String) {
        guard case .object(let object)? = try? JSONParser.parse(Data(text.utf8)) else {
            return close(.notJSON("a message must be a JSON object"))
        }
        guard case .string(let type)? = object["type"] else { return close(.notJSON("a message needs a type")) }
        switch type {
        case "auth":
            guard case .string(let token)? = object["token"], let context else {
                return close(.unauthenticated("auth needs a token"))
            }
            checking = true
            let handler = NIOLoopBound(self, eventLoop: context.eventLoop)
            socket.tokens.verify(token) { result in
                let signIn = result.map { SocketSignIn(caller: $0, token: token) }
                handler.eventLoop.execute { handler.value.checked(signIn) }
            }
        case "watch", "unwatch":
            watch(type, object)
        default:
            outbox.send(#"{"type":"error","code":"bad_request","detail":"unknown message type"}"#)
        }
    }

    /// `watch` and `unwatch` (live queries): answered on the socket, by `id`.
    private func watch(_ type: String, _ message: JSONObject) {
        guard case .string(let key)? = message["id"], (1...64).contains(key.utf8.count) else {
            outbox.send(#"{"type":"error","code":"invalid_argument","field":"id","detail":"a watch needs an id of 1 to 64 characters"}"#)
            return
        }
        guard let signedIn, let watches = socket.hub.watches else {
            outbox.send(SocketWatches.error(key: key, .unauthenticated("send a token first")))
            return
        }
        let outbox = self.outbox
        let socketID = signedIn.socketID
        guard type == "watch" else {
            Task { await watches.unwatch(socketID: socketID, key: key) }
            return
        }
        // The query as geo.watch.open takes it; the edge keeps the lease itself.
        var body = JSONObject(message.filter { ["search", "within", "usersNear"].contains($0.key) })
        // A centre's place is named in the socket's language unless the watch names one.
        for key in ["search", "usersNear"] {
            if let language, case .object(var query)? = body[key], query["lang"] == nil {
                query["lang"] = .string(language.normalized)
                body[key] = .object(query)
            }
        }
        Task { await watches.open(socketID: socketID, key: key, body: body, outbox: outbox) }
    }

    /// A token's check came back: sign in (or renew), then the messages that waited.
    private func checked(_ result: Result<SocketSignIn, any Error>) {
        checking = false
        guard !closeSent else { return }
        switch result {
        case .success(let caller):
            signIn(caller)
        case .failure(let error):
            close(.unauthenticated((error as? ServiceError)?.message ?? "the token is not valid"))
        }
        while !checking, !closeSent, !waiting.isEmpty {
            handle(waiting.removeFirst())
        }
    }

    /// Signs the socket in as `caller`'s user (answering `ready`), or, when it is
    /// already, moves its deadline to the renewed token's expiry.
    private func signIn(_ signIn: SocketSignIn) {
        let caller = signIn.caller
        if let signedIn {
            guard signedIn.userId == caller.userID else { return close(.unauthenticated("a socket belongs to one user")) }
            outbox.signedIn(until: caller.expiresAt)
            socket.hub.watches?.signedIn(socketID: signedIn.socketID, token: signIn.token)
            return
        }
        let ready = JSONWriter.data(.object(["type": .string("ready"), "userId": .string(caller.userID),
                                             "expiresAt": .string(Timestamp.format(caller.expiresAt))]))
        guard let socketID = socket.hub.register(outbox, userId: caller.userID, greeting: String(decoding: ready, as: UTF8.self)) else {
            return close(.tooManySockets)
        }
        signedIn = (caller.userID, socketID)
        outbox.signedIn(until: caller.expiresAt)
        socket.hub.watches?.signedIn(socketID: socketID, token: signIn.token)
    }

    /// Closes the socket with `closing`: no more events, the close frame, and the
    /// connection once the client answers it or `EventSocket.closeTimeout` passes.
    private func close(_ closing: EventSocket.Closing) {
        outbox.close(closing, fromSocket: true)
        guard !closeSent, let context else { return }
        closeSent = true
        partial = nil
        waiting = []
        socket.logger.debug("closing a socket", metadata: ["code": "\(closing.code)", "reason": "\(closing.reason)"])
        var data = context.channel.allocator.buffer(capacity: 2 + closing.reason.utf8.count)
        data.write(webSocketErrorCode: closing.code)
        data.writeString(closing.reason)
        context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: data)), promise: nil)
        let channel = context.channel
        closeTimer = context.eventLoop.scheduleTask(in: EventSocket.closeTimeout) { channel.close(promise: nil) }
    }
}

/// Verifies access tokens with auth's keys, off the event loops and Swift's
/// cooperative threads (the first check of a key fetches it from auth, which blocks).
struct TokenCheck: Sendable {
    let verifier: TokenVerifier

    func verify(_ token: String, then done: @escaping @Sendable (Result<Caller, any Error>) -> Void) {
        DispatchQueue.global().async {
            done(Result { try verifier.verify(token) })
        }
    }

    func verify(_ token: String) async throws -> Caller {
        try await withCheckedThrowingContinuation { continuation in
            verify(token) { continuation.resume(with: $0) }
        }
    }
}
