import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client sends too slowly: a request's headers must all
/// arrive within `headers` of the connection opening (or of the previous response
/// ending), and its body within `body` of the headers. The idle timeout alone lets a
/// client that sends a byte every few seconds hold a connection for ever.
final class RequestDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let headers: TimeAmount
    private let body: TimeAmount
    private var deadline: Scheduled<Void>?

    init(headers: TimeAmount, body: TimeAmount) {
        self.headers = headers
        self.body = body
    }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(headers, context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: arm(body, context: context)
        case .end: deadline?.cancel(); deadline = nil
        case .body: break
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // The next request's headers are due from the end of this response on.
        if case .end = unwrapOutboundIn(data) { arm(headers, context: context) }
        context.write(data, promise: promise)
    }

    private func arm(_ amount: TimeAmount, context: ChannelHandlerContext) {
        deadline?.cancel()
        let channel = context.channel
        deadline = context.eventLoop.scheduleTask(in: amount) {
            channel.close(promise: nil)
        }
    }
}
