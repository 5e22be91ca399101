import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Serves the passed routes (`PassedRoutes`) on the connection's event loop, between
/// Hummingbird's connection state handler and its request loop; every other request
/// goes on to Hummingbird.
///
/// Through Hummingbird a request wakes a task on Swift's thread pool, which waits for
/// the service's reply and hands its answer back to the event loop: two thread
/// hand-overs of the five a search cost, and half the edge's own CPU (BENCHMARKS.md,
/// "Edge"). Here the request is sent to the service from the event loop, and its reply
/// comes back to the same loop (`ZMTPLink`).
///
/// HTTP/1.1 answers in the order it is asked, and either side may be answering: what
/// arrives while a request is answered, passed or Hummingbird's, waits here (and no
/// more is read while anything waits), and is taken in turn once that answer's end is
/// written.
final class PassingHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum State {
        case idle
        /// A passed request's head; its end (after a body, which is not read) still to come.
        case reading(HTTPRequest, PassRoute, parameters: [String: String])
        /// A passed request asked of its service, its answer not yet written.
        case answering
        /// A request of Hummingbird's, `ended` once its last part has gone on.
        case forwarding(ended: Bool)
    }

    private let passed: PassedRoutes
    private var state = State.idle
    /// Parts that came while a request was being answered, in order.
    private var waiting = CircularBuffer<HTTPRequestPart>()
    /// A read asked for while parts wait: asked for once they are taken.
    private var readHeld = false
    private var removed = false

    init(passed: PassedRoutes) {
        self.passed = passed
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        removed = true
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        guard waiting.isEmpty else { return waiting.append(part) }
        take(part, context: context)
    }

    func read(context: ChannelHandlerContext) {
        guard !isHolding else {
            readHeld = true
            return
        }
        context.read()
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let ends = if case .end = unwrapOutboundIn(data) { true } else { false }
        context.write(data, promise: promise)
        // Hummingbird's answer is out: the next request's turn.
        if ends, case .forwarding = state {
            state = .idle
            takeWaiting(context: context)
        }
    }

    /// Whether a request is being answered, so that what comes next must wait.
    private var isAnswering: Bool {
        switch state {
        case .answering, .forwarding(ended: true): true
        case .idle, .reading, .forwarding(ended: false): false
        }
    }

    /// Whether reading stops: once a part waits. Not merely while a request is
    /// answered: a client that asks once and waits sends nothing meanwhile, and a read
    /// held and asked for again costs two `epoll_ctl` calls a request (NIO drops the
    /// socket's read interest and takes it up again). A client that pipelines gets one
    /// read's parts into `waiting`, then no more until they are taken.
    private var isHolding: Bool { !waiting.isEmpty }

    /// Takes a part: a passed request's is kept or asked, another goes on to Hummingbird
    /// (returns true then).
    @discardableResult
    private func take(_ part: HTTPRequestPart, context: ChannelHandlerContext) -> Bool {
        switch state {
        case .idle:
            if case .head(let head) = part {
                if let (route, parameters) = passed.route(for: head) {
                    state = .reading(head, route, parameters: parameters)
                    return false
                }
                state = .forwarding(ended: false)
            }
            // A head for Hummingbird; or the rest of a body it answered before reading
            // it all (a 413), which it reads and drops.
            context.fireChannelRead(wrapInboundOut(part))
            return true
        case .reading(let head, let route, let parameters):
            guard case .end = part else { return false }
            state = .answering
            ask(head, route: route, parameters: parameters, context: context)
            return false
        case .answering, .forwarding(ended: true):
            waiting.append(part)
            return false
        case .forwarding(ended: false):
            if case .end = part { state = .forwarding(ended: true) }
            context.fireChannelRead(wrapInboundOut(part))
            return true
        }
    }

    private func ask(_ head: HTTPRequest, route: PassRoute, parameters: [String: String], context: ChannelHandlerContext) {
        let loop = context.eventLoop
        let bound = NIOLoopBound((handler: self, context: context), eventLoop: loop)
        let closing = head.headerFields[.connection]?.lowercased() == "close"
        let peer = context.channel.remoteAddress?.ipAddress ?? "unknown"
        passed.answer(head, route: route, parameters: parameters, peer: peer) { reply in
            if loop.inEventLoop {
                bound.value.handler.write(reply, closing: closing, context: bound.value.context)
            } else {
                loop.execute { bound.value.handler.write(reply, closing: closing, context: bound.value.context) }
            }
        }
    }

    /// Writes a passed request's answer, and takes what waited. An answer that says
    /// `Connection: close` is followed by the close (`ClosingResponses`).
    private func write(_ reply: EdgeReply, closing: Bool, context: ChannelHandlerContext) {
        guard !removed else { return }
        var headers = reply.headers
        if headers[.contentLength] == nil { headers[.contentLength] = "\(reply.body?.readableBytes ?? 0)" }
        if closing { headers[.connection] = "close" }
        context.write(wrapOutboundOut(.head(HTTPResponse(status: reply.status, headerFields: headers))), promise: nil)
        if let body = reply.body, body.readableBytes > 0 { context.write(wrapOutboundOut(.body(body)), promise: nil) }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        state = .idle
        takeWaiting(context: context)
    }

    /// Takes the parts that waited while the last request was answered, until one
    /// has to be answered first; then reads again if a read was held back.
    private func takeWaiting(context: ChannelHandlerContext) {
        var forwarded = false
        while !isAnswering, let part = waiting.popFirst() {
            forwarded = take(part, context: context) || forwarded
        }
        // Outside a read: Hummingbird's channel takes what it was given only when
        // told that a read is complete.
        if forwarded { context.fireChannelReadComplete() }
        if readHeld, !isHolding {
            readHeld = false
            context.read()
        }
    }
}
