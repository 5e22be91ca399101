import Contracts
import Foundation
import NIOCore
import NIOPosix
import ServiceClient
import Wire

/// One ZMTP connection from an event loop to a service's ROUTER, speaking as a
/// DEALER, and the requests sent on it. Everything here happens on its loop: a
/// request is written from the loop that serves it, and its reply is read and handed
/// to its caller on the same loop, with no other thread between.
///
/// It keeps `DealerLink`'s promises: each try waits `timeout`; one that gets no reply
/// is sent again with the same id while tries are left, then the caller gets
/// `unavailable`; a reply to a try of a request already answered is dropped. Like a
/// libzmq DEALER it connects again by itself (every 100 ms) when the connection
/// drops or the service is not there yet; what is sent meanwhile waits for it.
final class ZMTPConnection {
    let loop: any EventLoop
    let endpoint: ZMTPEndpoint
    let service: String
    private let timeout: TimeAmount

    private struct Pending {
        /// The message as it goes on the wire, ready to be written again.
        var message: ByteBuffer
        var triesLeft: Int
        /// The try now waiting: a deadline counts only against the try it was set for.
        var currentTry: UInt64 = 0
        var then: RequestLink.Completion
    }

    private var channel: (any Channel)?
    /// Whether the peer's READY came: messages go out only after it.
    private var isReady = false
    private var isClosed = false
    /// Messages written while there is no ready connection, in order.
    private var waiting: [ByteBuffer] = []
    private var pending: [String: Pending] = [:]
    /// Every try waits the same time, so deadlines come in the order tries were sent.
    private var deadlines = CircularBuffer<(at: NIODeadline, id: String, try: UInt64)>()
    private var tries: UInt64 = 0
    private var timer: Scheduled<Void>?
    private var reconnect: Scheduled<Void>?
    /// Handshakes completed, for tests: a connection the peer dropped makes another.
    private(set) var handshakes = 0

    static let reconnectInterval = TimeAmount.milliseconds(100)
    /// Messages kept while disconnected; a try past it counts as one that timed out.
    static let waitingLimit = 100_000
    static let replyLimits = (frames: 2 + Limits.requestFrames, bytes: Limits.messageBytes + 1024)

    init(service: String, endpoint: ZMTPEndpoint, timeout: TimeInterval, loop: any EventLoop) {
        self.service = service
        self.endpoint = endpoint
        self.timeout = .nanoseconds(Int64(timeout * 1_000_000_000))
        self.loop = loop
    }

    // MARK: Requests

    func send(_ frames: [Data], id: String, tries: Int, then: @escaping RequestLink.Completion) {
        loop.assertInEventLoop()
        guard !isClosed else { return then(.failure(ServiceError.unavailable("the \(service) client is closed"))) }
        // A second caller with an id in flight is refused: the first is answered.
        guard pending[id] == nil else {
            return then(.failure(ServiceError.conflict("request id \"\(id)\" is in flight already")))
        }
        // The empty delimiter first, as a REQ socket would send it.
        let wire = [Data()] + frames
        var message = channel?.allocator.buffer(capacity: ZMTPWire.messageBytes(wire))
            ?? ByteBufferAllocator().buffer(capacity: ZMTPWire.messageBytes(wire))
        ZMTPWire.writeMessage(wire, into: &message)
        pending[id] = Pending(message: message, triesLeft: max(1, tries), then: then)
        sendTry(id)
    }

    private func sendTry(_ id: String) {
        guard var request = pending[id] else { return }
        self.tries += 1
        request.currentTry = self.tries
        pending[id] = request
        deadlines.append((.now() + timeout, id, self.tries))
        armTimer()
        if isReady, let channel {
            channel.writeAndFlush(request.message, promise: nil)
        } else if waiting.count < Self.waitingLimit {
            waiting.append(request.message)
        }
    }

    /// A reply from the service: its caller's, unless that request was answered already.
    func received(_ frames: [ByteBuffer]) {
        var frames = frames
        if frames.first?.readableBytes == 0 { frames.removeFirst() }
        let data = frames.map { Data($0.readableBytesView) }
        guard let frame0 = data.first, let id = ReplyEnvelope.requestID(of: frame0), let request = pending.removeValue(forKey: id) else { return }
        request.then(.success(data))
    }

    // MARK: Deadlines

    private func armTimer() {
        guard timer == nil, let first = deadlines.first else { return }
        let bound = NIOLoopBound(self, eventLoop: loop)
        timer = loop.scheduleTask(deadline: first.at) {
            let connection = bound.value
            connection.timer = nil
            connection.expire(now: .now())
            connection.armTimer()
        }
    }

    /// Tries whose time is up: sent again while tries are left, else failed.
    private func expire(now: NIODeadline) {
        while let first = deadlines.first, first.at <= now {
            deadlines.removeFirst()
            guard var request = pending[first.id], request.currentTry == first.try else { continue }
            request.triesLeft -= 1
            if request.triesLeft > 0 {
                pending[first.id] = request
                sendTry(first.id)
            } else {
                pending[first.id] = nil
                request.then(.failure(ServiceError.unavailable(
                    "the service did not answer", detail: "every try to \(service) at \(endpoint) timed out")))
            }
        }
    }

    // MARK: The connection

    func connect() {
        loop.assertInEventLoop()
        guard !isClosed, channel == nil else { return }
        reconnect = nil
        let bound = NIOLoopBound(self, eventLoop: loop)
        let bootstrap = ClientBootstrap(group: loop)
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(2))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        ByteToMessageHandler(ZMTPDecoder(maxFrames: Self.replyLimits.frames, maxMessageBytes: Self.replyLimits.bytes)),
                        ZMTPHandler(connection: bound),
                    ])
                }
            }
        let connecting: EventLoopFuture<any Channel> = switch endpoint {
        case .tcp(let host, let port): bootstrap.connect(host: host, port: port)
        case .ipc(let path): bootstrap.connect(unixDomainSocketPath: path)
        }
        connecting.whenComplete { result in
            let connection = bound.value
            switch result {
            case .success(let channel):
                if connection.isClosed { channel.close(promise: nil) } else { connection.channel = channel }
            case .failure:
                connection.scheduleReconnect()
            }
        }
    }

    /// The peer's READY: what waited goes out.
    func ready() {
        guard let channel else { return }
        isReady = true
        handshakes += 1
        for message in waiting { channel.write(message, promise: nil) }
        waiting.removeAll()
        channel.flush()
    }

    /// The connection ended: tries sent on it go unanswered and time out; a new one is made.
    func lost(_ ended: any Channel) {
        guard channel === ended || channel == nil else { return }
        channel = nil
        isReady = false
        scheduleReconnect()
    }

    private func scheduleReconnect() {
        guard !isClosed, reconnect == nil else { return }
        let bound = NIOLoopBound(self, eventLoop: loop)
        reconnect = loop.scheduleTask(in: Self.reconnectInterval) { bound.value.connect() }
    }

    /// Fails what is in flight with `unavailable` and closes the connection for good.
    func close() {
        loop.assertInEventLoop()
        guard !isClosed else { return }
        isClosed = true
        timer?.cancel()
        reconnect?.cancel()
        channel?.close(promise: nil)
        channel = nil
        let abandoned = pending.values
        pending.removeAll()
        waiting.removeAll()
        for request in abandoned { request.then(.failure(ServiceError.unavailable("the \(service) client closed"))) }
    }
}

/// The handshake and the traffic of one ZMTP connection, on its channel.
final class ZMTPHandler: ChannelInboundHandler {
    typealias InboundIn = ZMTPInbound
    typealias OutboundOut = ByteBuffer

    private let connection: NIOLoopBound<ZMTPConnection>

    init(connection: NIOLoopBound<ZMTPConnection>) {
        self.connection = connection
    }

    func channelActive(context: ChannelHandlerContext) {
        var greeting = context.channel.allocator.buffer(capacity: ZMTPWire.greetingBytes + 32)
        ZMTPWire.writeGreeting(into: &greeting)
        ZMTPWire.writeReady(socketType: "DEALER", into: &greeting)
        context.writeAndFlush(wrapOutboundOut(greeting), promise: nil)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.value.lost(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .greeting(let major, let mechanism):
            // NULL only: a service that asks for CURVE is reached through libzmq (`DealerLink`).
            if major < 3 || mechanism != "NULL" { context.close(promise: nil) }
        case .command(let name, let body):
            switch name {
            case "READY": connection.value.ready()
            case "PING":
                // TTL (2 bytes), then the context to send back.
                var pingContext = body
                pingContext.moveReaderIndex(forwardBy: min(2, pingContext.readableBytes))
                var pong = context.channel.allocator.buffer(capacity: 8 + pingContext.readableBytes)
                ZMTPWire.writePong(context: pingContext, into: &pong)
                context.writeAndFlush(wrapOutboundOut(pong), promise: nil)
            case "ERROR": context.close(promise: nil)
            default: break
            }
        case .message(let frames):
            connection.value.received(frames)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
