import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOHTTP1

/// Hummingbird's HTTP/1 channel with the WebSocket upgrade, guarded where it is
/// open before the first request: the upgrade negotiation reads the first request's
/// head before any of the server's per-request handlers (deadlines, idle timeout)
/// are in the pipeline, and a first head that never completes or does not parse
/// would otherwise hold the connection for ever.
///
/// `FirstRequestGuard` sits below the HTTP encoder and decoder: it closes a connection whose
/// first head takes longer than the header deadline, and answers `400` (or `431`
/// past the header limit) and closes when that head does not parse, which
/// `NegotiationErrors`, at the end of the pipeline, sees (NIO's upgrade handler
/// passes a decoding error on and leaves the negotiation waiting for ever).
struct GuardedHTTPChannel: ServerChildChannel {
    typealias Value = HTTP1WebSocketUpgradeChannel.Value

    let base: HTTP1WebSocketUpgradeChannel
    let headerDeadline: TimeAmount
    let headerBytes: Int

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        base.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Below the HTTP encoder and decoder (above TLS, when there is TLS): it reads
            // the bytes as they come, and its answer is bytes.
            let encoder = try channel.pipeline.syncOperations.handler(type: HTTPResponseEncoder.self)
            let firstRequest = FirstRequestGuard(deadline: headerDeadline, headerBytes: headerBytes)
            try channel.pipeline.syncOperations.addHandler(firstRequest, position: .before(encoder))
            try channel.pipeline.syncOperations.addHandler(NegotiationErrors(firstRequest: firstRequest))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
        // Whatever happened, the connection is done with.
        try? await value.channel.close()
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
            timer?.cancel()
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

    /// Answers a first request whose head did not parse, and closes.
    func refuseMalformed() {
        let status = seen > headerBytes ? "431 Request Header Fields Too Large" : "400 Bad Request"
        answer(ByteBuffer(string: "HTTP/1.1 \(status)\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"))
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
/// HTTP encoder) instead of being dropped. Later errors pass on to Hummingbird,
/// which answers them itself.
final class NegotiationErrors: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let firstRequest: FirstRequestGuard

    init(firstRequest: FirstRequestGuard) {
        self.firstRequest = firstRequest
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        let negotiating = (try? context.pipeline.syncOperations
            .handler(type: NIOTypedHTTPServerUpgradeHandler<HTTP1WebSocketUpgradeChannel.UpgradeResult>.self)) != nil
        guard negotiating, error is HTTPParserError else { return context.fireErrorCaught(error) }
        firstRequest.refuseMalformed()
    }
}
