import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Ends the connection after a response that says `Connection: close`: the edge
/// says so when it refuses a body for its size (413).
///
/// Closing at once would lose the answer: a client still sending its body gets a
/// reset, which discards the 413 waiting in its receive buffer. So the edge first
/// closes its sending side (the client reads the response, then end of stream),
/// and reads on for at most `lingerTime` and `lingerBytes`, discarding what comes
/// (as nginx's lingering close does), before it closes. A body is never read whole:
/// past the limit nothing is kept, and what is discarded is bounded.
final class ClosingResponses: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    static let lingerTime = TimeAmount.seconds(2)
    static let lingerBytes = 8 * 1024 * 1024

    private var closeAfterEnd = false
    private var lingering = false
    private var discarded = 0
    private var lingerLimit: Scheduled<Void>?

    func handlerRemoved(context: ChannelHandlerContext) {
        lingerLimit?.cancel()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if lingering, case .body(let bytes) = unwrapInboundIn(data) {
            discarded += bytes.readableBytes
            if discarded > Self.lingerBytes { context.close(promise: nil) }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(let head):
            closeAfterEnd = head.headerFields[.connection]?.lowercased() == "close"
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            guard closeAfterEnd else { return context.write(data, promise: promise) }
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.cascade(to: promise)
            let channel = context.channel
            written.futureResult.assumeIsolated().whenComplete { [self] _ in
                lingering = true
                channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
                lingerLimit = channel.eventLoop.scheduleTask(in: Self.lingerTime) { channel.close(promise: nil) }
            }
            context.writeAndFlush(data, promise: written)
        }
    }
}
