import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client sends too slowly: a request's headers must all
/// arrive within `headers` of the connection opening (or of the previous response
/// ending), and its body within `body` of the headers, with no silence of `silence`
/// (30 s, EDGE.md) on the way. The idle timeout alone lets a client that sends a byte
/// every few seconds hold a connection for ever.
final class RequestDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let headers: TimeAmount
    private let body: TimeAmount
    private let silence: TimeAmount
    private var deadline: Scheduled<Void>?
    /// While a body comes, the silence allowed before its next part.
    private var silent: Scheduled<Void>?

    init(headers: TimeAmount, body: TimeAmount, silence: TimeAmount = .seconds(30)) {
        self.headers = headers
        self.body = body
        self.silence = silence
    }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(headers, context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        silent?.cancel()
        silent = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            arm(body, context: context)
            listen(context: context)
        case .body:
            listen(context: context)
        case .end:
            deadline?.cancel()
            deadline = nil
            silent?.cancel()
            silent = nil
        }
        context.fireChannelRead(data)
    }

    /// A request's body that stops coming for `silence` is as good as gone.
    private func listen(context: ChannelHandlerContext) {
        silent?.cancel()
        let channel = context.channel
        silent = context.eventLoop.scheduleTask(in: silence) {
            channel.close(promise: nil)
        }
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
