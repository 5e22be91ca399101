import Contracts
import Foundation
import HTTPTypes
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import ServiceCore

/// The edge's connections: HTTP/1.1 served by Hummingbird, and the upgrade of
/// `GET /v1/events` to the events WebSocket, served by channel handlers
/// (`EventSocketHandler`) rather than a task per socket.
///
/// The first request's head is read by NIO's upgrade negotiation before any of
/// Hummingbird's per-request handlers (deadlines, idle timeout) are in the pipeline,
/// so it is guarded here: `FirstRequestGuard`, below the HTTP encoder and decoder,
/// closes a connection whose first head takes longer than the header deadline, and
/// answers `400` (or `431` past the header limit) when that head does not parse,
/// which `NegotiationErrors`, at the end of the pipeline, sees (NIO's upgrade handler
/// passes a decoding error on and leaves the negotiation waiting for ever).
struct EdgeChannel: ServerChildChannel, HTTPChannelHandler {
    /// Whether an upgrade opens a socket, decided before it is answered.
    enum UpgradeDecision: Sendable {
        /// Open it; signed in already when the upgrade carried a token, its watches'
        /// names in the language of its `Accept-Language`.
        case open(SocketSignIn?, language: LanguageTag?)
        /// Do not: the answer (429, 401, …) has been written through `FirstRequestGuard`.
        case refused
    }

    /// What the first request made of the connection.
    enum Negotiated: Sendable {
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// An upgrade asked for and not made: answered `400` unless answered already.
        case refusedUpgrade(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// The events WebSocket, served by its handlers until it closes.
        case webSocket
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let responder: Responder
    let http1: HTTP1Channel.Configuration
    let headerDeadline: TimeAmount
    let headerBytes: Int
    let passed: PassedRoutes
    let events: EventSocket
    /// Decides a `GET /v1/events` upgrade (rate limit, socket limits, a token in the
    /// `Authorization` header), answering a refusal itself.
    let decide: @Sendable (HTTPRequest, any Channel) async -> UpgradeDecision

    init(responder: @escaping Responder, http1: HTTP1Channel.Configuration, headerDeadline: TimeAmount, headerBytes: Int,
         passed: PassedRoutes, events: EventSocket, decide: @escaping @Sendable (HTTPRequest, any Channel) async -> UpgradeDecision) {
        self.responder = Self.redirectingUpgrades(responder)
        self.http1 = http1
        self.headerDeadline = headerDeadline
        self.headerBytes = headerBytes
        self.passed = passed
        self.events = events
        self.decide = decide
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let passed = self.passed
        return channel.eventLoop.makeCompletedFuture {
            let decision = NIOLoopBoundBox<UpgradeDecision?>(nil, eventLoop: channel.eventLoop)
            let upgrader = NIOTypedWebSocketServerUpgrader<Negotiated>(
                maxFrameSize: EventSocket.maxMessageBytes,
                shouldUpgrade: { channel, head in
                    let promise = channel.eventLoop.makePromise(of: UpgradeDecision.self)
                    promise.completeWithTask {
                        guard head.uri.split(separator: "?").first == "/v1/events" else { return .refused }
                        return await decide(try HTTPRequest(head, secure: false, splitCookie: false), channel)
                    }
                    return promise.futureResult.map { decided -> HTTPHeaders? in
                        decision.value = decided
                        if case .open = decided { return [:] }
                        return nil
                    }
                },
                upgradePipelineHandler: { channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard case .open(let caller, let language)? = decision.value else {
                            throw NIOWebSocketUpgradeError.unsupportedWebSocketTarget
                        }
                        try Self.keepSocketLean(channel)
                        try channel.pipeline.syncOperations.addHandler(events.handler(on: channel, caller: caller, language: language))
                        return .webSocket
                    }
                })
            let negotiation = NIOTypedHTTPServerUpgradeConfiguration(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { channel in
                    channel.eventLoop.makeCompletedFuture {
                        let sync = channel.pipeline.syncOperations
                        try sync.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try sync.addHandlers(http1.additionalChannelHandlers())
                        try sync.addHandler(HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger))
                        try sync.addHandler(PassingHandler(passed: passed))
                        let asyncChannel = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        return decision.value == nil ? .http(asyncChannel) : .refusedUpgrade(asyncChannel)
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration<Negotiated>(upgradeConfiguration: negotiation)
            configuration.enablePipelining = false  // NIOAsyncChannel reads one request at a time
            configuration.enableErrorHandling = false  // Hummingbird answers errors
            configuration.enableResponseHeaderValidation = false  // HTTPTypes validates them
            configuration.decoderConfiguration.maxHeaderFieldSize = http1.httpDecoder.maxHeaderFieldSize
            configuration.decoderConfiguration.maxHeaderListSize = http1.httpDecoder.maxHeaderListSize
            configuration.decoderConfiguration.maxHeaderFieldCount = http1.httpDecoder.maxHeaderFieldCount
            let sync = channel.pipeline.syncOperations
            let negotiated = try sync.configureUpgradableHTTPServerPipeline(configuration: configuration)
            // Below the HTTP encoder and decoder (above TLS, when there is TLS): it reads
            // the bytes as they come, and its answer is bytes.
            let firstRequest = FirstRequestGuard(deadline: headerDeadline, headerBytes: headerBytes)
            try sync.addHandler(firstRequest, position: .before(try sync.handler(type: HTTPResponseEncoder.self)))
            try sync.addHandler(NegotiationErrors(firstRequest: firstRequest))
            return Value(negotiated: negotiated, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http(let http1):
                await handleHTTP(asyncChannel: http1, logger: logger)
            case .refusedUpgrade(let http1):
                try await http1.executeThenClose { _, outbound in
                    let refusal = HTTPResponse(status: .badRequest, headerFields: [.connection: "close", .contentLength: "0"])
                    try await outbound.write(contentsOf: [.head(refusal), .end(nil)])
                }
            case .webSocket:
                // Its handlers serve it, and close it, without this task.
                return
            }
        } catch {
            logger.debug("connection ended", metadata: ["error": "\(error)"])
        }
        // Whatever happened, the connection is done with.
        try? await value.channel.close()
    }

    /// An upgraded socket mostly waits: a small first read buffer (NIO keeps one per
    /// channel, 2 KB by default), and TCP keepalive to find a peer that vanished (a
    /// phone out of coverage) beside the hub's pings.
    private static func keepSocketLean(_ channel: any Channel) throws {
        guard let options = channel.syncOptions else { return }
        let tcp = { (option: Int32) in ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: option)) }
        try options.setOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 64 * 1024))
        try options.setOption(ChannelOptions.socketOption(.so_keepalive), value: 1)
        try options.setOption(tcp(TCP_KEEPIDLE), value: 60)
        try options.setOption(tcp(TCP_KEEPINTVL), value: 10)
        try options.setOption(tcp(TCP_KEEPCNT), value: 3)
    }

    /// NIO negotiates an upgrade only on a connection's first request: a later
    /// request asking for one is redirected to the same address with the connection
    /// closed, so that the client asks again on a new one (as Hummingbird does).
    private static func redirectingUpgrades(_ responder: @escaping Responder) -> Responder {
        { request, writer, channel in
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                return try await responder(request, writer, channel)
            }
            var location = request.uri.path
            if let query = request.uri.query { location += "?\(query)" }
            try await writer.writeResponse(HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: location]))
            try await channel.close()
        }
    }
}

/// Below the HTTP codec: closes the connection when the first request's head
/// (up to the empty line after its header lines) has not arrived within the
/// deadline, and answers a first head that does not parse. After that head it only
/// passes bytes on.
///
/// It is also how a refused WebSocket upgrade is answered: the upgrade negotiation
/// can only upgrade or not (and answers "not" with a bare 400), so the edge writes
/// its own answer (429, 401) here, and drops what the negotiation writes after it.
final class FirstRequestGuard: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = ByteBuffer

    private let deadline: TimeAmount
    private let headerBytes: Int
    private var context: ChannelHandlerContext?
    private var timer: Scheduled<Void>?
    private var seen = 0
    private var headArrived = false
    private var answered = false
    /// The last bytes seen, to find `\r\n\r\n` across reads.
    private var tail: [UInt8] = []

    init(deadline: TimeAmount, headerBytes: Int) {
        self.deadline = deadline
        self.headerBytes = headerBytes
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        let channel = context.channel
        timer = context.eventLoop.scheduleTask(in: deadline) { channel.close(promise: nil) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !headArrived else { return context.fireChannelRead(data) }
        let buffer = unwrapInboundIn(data)
        seen += buffer.readableBytes
        let bytes = tail + (buffer.getBytes(at: buffer.readerIndex, length: buffer.readableBytes) ?? [])
        let complete = bytes.count >= 4 && (0...(bytes.count - 4)).contains { index in
            bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10
        }
        tail = Array(bytes.suffix(3))
        if complete {
            headArrived = true
            tail = []
            timer?.cancel()
            timer = nil
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard !answered else {
            promise?.fail(ChannelError.outputClosed)
            return
        }
        context.write(data, promise: promise)
    }

    /// Answers a first request whose head did not parse (`error`), and closes: `431`
    /// past the header limits, else `400` (`MalformedHeads`).
    func refuseMalformed(_ error: any Error) {
        let status = seen > headerBytes ? .requestHeaderFieldsTooLarge : MalformedHeads.status(for: error)
        answer(ByteBuffer(string: "HTTP/1.1 \(status.code) \(status.reasonPhrase)\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
    }

    /// Writes `response` (a whole HTTP/1.1 response, `Connection: close`) as the
    /// answer to the first request, and closes; nothing written after it goes out.
    func answer(_ response: ByteBuffer) {
        guard let context, !answered else { return }
        timer?.cancel()
        context.writeAndFlush(wrapOutboundOut(response), promise: nil)
        answered = true
        context.close(promise: nil)
    }

    /// Answers the first request with `response` on `channel`'s guard (from any thread).
    static func answer(_ response: ByteBuffer, on channel: any Channel) async {
        try? await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.handler(type: FirstRequestGuard.self).answer(response)
        }.get()
    }
}

/// At the end of the pipeline while the upgrade negotiation runs: a decoding error
/// of the first head is answered (by `FirstRequestGuard`, which writes below the
/// HTTP encoder) instead of being dropped. Later errors pass on.
final class NegotiationErrors: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let firstRequest: FirstRequestGuard

    init(firstRequest: FirstRequestGuard) {
        self.firstRequest = firstRequest
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let negotiating = (try? context.pipeline.syncOperations
            .handler(type: NIOTypedHTTPServerUpgradeHandler<EdgeChannel.Negotiated>.self)) != nil
        guard negotiating, error is HTTPParserError else { return context.fireErrorCaught(error) }
        firstRequest.refuseMalformed(error)
    }
}
