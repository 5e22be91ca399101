import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL

/// POSTs to one HTTPS origin over HTTP/1.1, for a push service that chose it by ALPN
/// (`HTTP2Origin` finds out, and `PushHTTP` sends that origin's pushes here from then on).
/// Every push service known speaks HTTP/2, so this is the rare path: plain keep-alive
/// connections, one request at a time on each, at most `maxConnections` to the origin,
/// the requests beyond them waiting in order. An idle connection closes after
/// `idleTimeout`; a request with no answer by its deadline fails (its push is tried
/// again later) and its connection closes.
///
/// Everything but `post` runs on the origin's event loop, so the pool needs no lock.
final class HTTP1Origin: Sendable {
    /// Connections open to one origin at most (AsyncHTTPClient's default, which carried these pushes before).
    static let maxConnections = 8

    typealias Request = OriginRequest

    private let endpoint: OriginEndpoint
    private var eventLoop: any EventLoop { endpoint.eventLoop }
    private var authority: String { endpoint.authority }
    private let pool: NIOLoopBoundBox<Pool>

    /// - Parameter endpoint: with TLS that offers `http/1.1` alone.
    init(_ endpoint: OriginEndpoint) {
        self.endpoint = endpoint
        self.pool = .makeBoxSendingValue(Pool(), eventLoop: endpoint.eventLoop)
    }

    /// POSTs `body` to `path`; the future completes on this origin's event loop.
    func post(_ path: String, headers: [(String, String)], body: ByteBuffer) -> EventLoopFuture<PushHTTP.Answer> {
        let promise = eventLoop.makePromise(of: PushHTTP.Answer.self)
        let request = Request(path: path, headers: headers, body: body, promise: promise, deadline: .now() + endpoint.timeout)
        eventLoop.execute { self.enqueue(request) }
        return promise.futureResult
    }

    /// Closes every connection; requests after it, and those waiting, fail.
    func close() -> EventLoopFuture<Void> {
        eventLoop.submit {
            let pool = self.pool.value
            pool.closed = true
            for request in pool.waiting { request.promise.fail(OriginFailure.shutDown) }
            pool.waiting.removeAll()
            for exchange in pool.idle + pool.busy { exchange.close(.shutDown) }
        }
    }

    // MARK: On the loop

    /// The origin's connections: idle ones (kept for the next request), busy ones, and
    /// the requests waiting for one.
    final class Pool {
        var idle: [Exchange] = []
        var busy: [Exchange] = []
        var connecting = 0
        var waiting = CircularBuffer<Request>()
        var closed = false
        var open: Int { idle.count + busy.count + connecting }
    }

    private func enqueue(_ request: Request) {
        let pool = pool.value
        guard !pool.closed else {
            request.promise.fail(OriginFailure.shutDown)
            return
        }
        pool.waiting.append(request)
        dispatch()
        // Still waiting (the last, as requests leave from the front): failed if it still is at
        // its deadline. Once sent, its connection answers for it.
        let promise = request.promise
        guard pool.waiting.last?.promise.futureResult === promise.futureResult else { return }
        eventLoop.assumeIsolated().scheduleTask(deadline: request.deadline) {
            guard let index = pool.waiting.firstIndex(where: { $0.promise.futureResult === promise.futureResult }) else { return }
            pool.waiting.remove(at: index).promise.fail(OriginFailure(description: "no connection to \(self.authority) within the time allowed"))
        }
    }

    /// Hands waiting requests to idle connections, and opens connections for the rest (up to the limit).
    private func dispatch() {
        let pool = pool.value
        while !pool.waiting.isEmpty, let exchange = pool.idle.popLast() {
            pool.busy.append(exchange)
            exchange.send(pool.waiting.removeFirst())
        }
        // One connection more for each request left that none being made will take.
        while pool.waiting.count > pool.connecting, pool.open < Self.maxConnections {
            pool.connecting += 1
            connect()
        }
    }

    private func connect() {
        let exchange = Exchange(authority: authority, origin: self)
        let bound = NIOLoopBound(exchange, eventLoop: eventLoop)
        endpoint.connect { [idleTimeout = endpoint.idleTimeout] pipeline in
            try pipeline.addHTTPClientHandlers()
            try pipeline.addHandler(IdleStateHandler(allTimeout: idleTimeout))
            try pipeline.addHandler(bound.value)
        }
            .assumeIsolated()
            .whenComplete { result in
                let pool = self.pool.value
                pool.connecting -= 1
                switch result {
                case .success:
                    guard !pool.closed else { return exchange.close(.shutDown) }
                    // Closed already (the server hung up at once): it left the pool then; others may be needed.
                    if !exchange.isClosed { pool.idle.append(exchange) }
                    self.dispatch()
                case .failure(let error):
                    // The requests waiting would meet the same: they fail now and are tried again later.
                    let failure = OriginFailure(description: "cannot connect to \(self.authority): \(error)")
                    while let request = pool.waiting.popFirst() { request.promise.fail(failure) }
                }
            }
    }

    /// A connection's request is answered and the connection may carry the next.
    fileprivate func release(_ exchange: Exchange) {
        let pool = pool.value
        pool.busy.removeAll { $0 === exchange }
        guard !pool.closed else { return exchange.close(.shutDown) }
        pool.idle.append(exchange)
        dispatch()
    }

    /// A connection closed (by either side): it leaves the pool.
    fileprivate func forget(_ exchange: Exchange) {
        let pool = pool.value
        pool.busy.removeAll { $0 === exchange }
        pool.idle.removeAll { $0 === exchange }
        dispatch()
    }
}

extension HTTP1Origin {
    /// One keep-alive connection and the request on it, if any. On the loop only.
    final class Exchange: ChannelInboundHandler {
        typealias InboundIn = HTTPClientResponsePart
        typealias OutboundOut = HTTPClientRequestPart

        private struct InFlight {
            var request: Request
            var status: Int?
            var headers = HTTPHeaders()
            var body: [UInt8] = []
            var keepAlive = true
            var deadline: Scheduled<Void>?
        }

        private let authority: String
        private let origin: HTTP1Origin
        private var context: ChannelHandlerContext?
        private var current: InFlight?
        private(set) var isClosed = false

        init(authority: String, origin: HTTP1Origin) {
            self.authority = authority
            self.origin = origin
        }

        func handlerAdded(context: ChannelHandlerContext) {
            self.context = context
        }

        func send(_ request: Request) {
            guard let context, !isClosed else {
                request.promise.fail(OriginFailure(description: "the connection to \(authority) closed"))
                origin.forget(self)
                return
            }
            var headers = HTTPHeaders(request.headers)
            headers.replaceOrAdd(name: "host", value: authority)
            headers.replaceOrAdd(name: "content-length", value: String(request.body.readableBytes))
            let head = HTTPRequestHead(version: .http1_1, method: .POST, uri: request.path, headers: headers)
            var inFlight = InFlight(request: request)
            inFlight.deadline = context.eventLoop.assumeIsolated().scheduleTask(deadline: request.deadline) {
                self.close(because: "no answer from \(self.authority) within the time allowed")
            }
            current = inFlight
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.write(wrapOutboundOut(.body(.byteBuffer(request.body))), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            guard var inFlight = current else { return }
            switch unwrapInboundIn(data) {
            case .head(let head):
                inFlight.status = Int(head.status.code)
                inFlight.headers = head.headers
                inFlight.keepAlive = head.isKeepAlive
                current = inFlight
            case .body(var bytes):
                let room = OriginRequest.answerBodyLimit - inFlight.body.count
                if room > 0, let kept = bytes.readBytes(length: min(room, bytes.readableBytes)) { inFlight.body += kept }
                current = inFlight
            case .end:
                current = nil
                inFlight.deadline?.cancel()
                inFlight.request.promise.succeed(PushHTTP.Answer(status: inFlight.status ?? 0, headers: inFlight.headers,
                                                                 body: Data(inFlight.body)))
                if inFlight.keepAlive { origin.release(self) } else { close(because: "the server closed the connection") }
            }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            // Idle for `idleTimeout` with no request: closed (one in flight has its own deadline).
            if event is IdleStateHandler.IdleStateEvent, current == nil {
                close(because: "idle")
                return
            }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            close(because: "the connection to \(authority) failed: \(error)")
        }

        func channelInactive(context: ChannelHandlerContext) {
            close(because: "the connection to \(authority) closed")
            context.fireChannelInactive()
        }

        func close(because reason: String) {
            close(OriginFailure(description: reason))
        }

        /// Fails the request on it, if any, and takes the connection out of the pool.
        func close(_ failure: OriginFailure) {
            guard !isClosed else { return }
            isClosed = true
            if let inFlight = current {
                current = nil
                inFlight.deadline?.cancel()
                inFlight.request.promise.fail(failure)
            }
            context?.close(promise: nil)
            context = nil
            origin.forget(self)
        }
    }
}
