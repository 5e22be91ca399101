import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes

/// A request head that does not parse is answered and the connection closed: `431
/// Request Header Fields Too Large` when it is over the header limits (16 KiB, 100
/// fields: NIO's decoder says `headerOverflow` for either), `400` for anything else.
///
/// Hummingbird answers every parse error of a later request on a connection with
/// `400`; this handler, after the HTTP codec, answers first. (A connection's first
/// head is answered by `FirstRequestGuard`, with the same statuses.)
final class MalformedHeads: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    static func status(for error: any Error) -> HTTPResponse.Status {
        (error as? HTTPParserError) == .headerOverflow ? .requestHeaderFieldsTooLarge : .badRequest
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError else { return context.fireErrorCaught(error) }
        let head = HTTPResponse(status: Self.status(for: error), headerFields: [.connection: "close", .contentLength: "0"])
        let channel = context.channel
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }
}
