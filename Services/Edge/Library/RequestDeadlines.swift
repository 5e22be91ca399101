import Foundation
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Closes a connection whose client sends too slowly: a request's headers must all
/// arrive within `headers` of the connection opening (or of the previous response
/// ending), and its body within `body` of the headers. The idle timeout alone lets a
/// client that sends a byte every few seconds hold a connection for ever.
///
/// A request moves the deadline three times; a timer scheduled and cancelled for each
/// move cost every request two timers. So the one timer stays where it is when the
/// deadline moves later (when it fires it looks at the deadline, and waits again if
/// that is still ahead) and is set again only when the deadline moves earlier.
final class RequestDeadlines: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private let headers: TimeAmount
    private let body: TimeAmount
    /// When the connection is closed unless the part it waits for comes; nil while
    /// a request is answered.
    private var deadline: NIODeadline?
    /// The timer, and when it fires (never after `deadline`).
    private var timer: (task: Scheduled<Void>, at: NIODeadline)?

    init(headers: TimeAmount, body: TimeAmount) {
        self.headers = headers
        self.body = body
    }

    func handlerAdded(context: ChannelHandlerContext) {
        arm(headers, context: context)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.task.cancel()
        timer = nil
        deadline = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head: arm(body, context: context)
        case .end: deadline = nil
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
        let due = context.eventLoop.now + amount
        deadline = due
        if let timer, timer.at <= due { return }
        timer?.task.cancel()
        schedule(at: due, context: context)
    }

    private func schedule(at due: NIODeadline, context: ChannelHandlerContext) {
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: context.eventLoop)
        timer = (context.eventLoop.scheduleTask(deadline: due) { bound.value.handler.fired(context: bound.value.context) }, due)
    }

    private func fired(context: ChannelHandlerContext) {
        timer = nil
        guard let deadline else { return }
        if deadline <= context.eventLoop.now {
            context.channel.close(promise: nil)
        } else {
            schedule(at: deadline, context: context)
        }
    }
}
