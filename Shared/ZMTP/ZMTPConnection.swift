import Contracts
import Foundation
import Logging
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
/// Unlike one, it knows which tries a dropped connection took with it: they count as
/// timed out at once (the next goes out on the next connection), not after `timeout`.
final class ZMTPConnection {
    let loop: any EventLoop
    let endpoint: ZMTPEndpoint
    let service: String
    let curve: CurveClient.Keys?
    private let timeout: TimeAmount
    private let logger: Logger?

    private struct Pending {
        /// The request's frames, the empty delimiter first: sealed afresh for each try under CURVE.
        var message: [Data]
        var triesLeft: Int
        /// The try now waiting: a deadline counts only against the try it was set for.
        var currentTry: UInt64 = 0
        /// Whether that try is in `waiting` (made while no connection was ready).
        var isWaiting = false
        var then: RequestLink.Completion
    }

    /// The connection, from its `channelActive` until its `channelInactive`.
    private var channel: (any Channel)?
    /// Whether a connection is being made (its name looked up, its TCP connect under way).
    private var isConnecting = false
    /// Whether the peer's READY came: messages go out only after it.
    private var isReady = false
    private var isClosed = false
    /// Tries made while there is no ready connection, in order, by request id and try
    /// number: one that is no longer current when the connection is ready (answered,
    /// tried again, or given up) is not sent.
    private var waiting: [(id: String, try: UInt64)] = []
    /// How many entries of `waiting` are current tries: the rest are dropped when they
    /// outnumber them, so a service away for long under steady traffic neither fills the
    /// queue with tries already given up (leaving new ones unqueued) nor grows it.
    private var currentWaiting = 0
    private let waitingLimit: Int
    private var pending: [String: Pending] = [:]
    /// Every try waits the same time, so deadlines come in the order tries were sent.
    private var deadlines = CircularBuffer<(at: NIODeadline, id: String, try: UInt64)>()
    private var tries: UInt64 = 0
    private var timer: Scheduled<Void>?
    private var reconnect: Scheduled<Void>?
    /// Handshakes completed, for tests: a connection the peer dropped makes another.
    private(set) var handshakes = 0
    /// Why the current connection's handshake failed, when the handler knows.
    private var handshakeProblem: String?
    /// Whether a failed handshake was logged: once until one succeeds again, not every 100 ms.
    private var refusalLogged = false

    static let reconnectInterval = TimeAmount.milliseconds(100)
    /// How late a timeout may be noticed. Answered tries keep their deadlines until they
    /// pass, one per request, so a timer at each would fire thousands of times a second
    /// under load; one fire takes every deadline due within this much.
    static let deadlineSlack = TimeAmount.milliseconds(20)
    /// Current tries kept while disconnected; a try past it counts as one that timed out.
    static let defaultWaitingLimit = 100_000
    static let replyLimits = (frames: 2 + Limits.requestFrames, bytes: Limits.messageBytes + 1024)

    init(service: String, endpoint: ZMTPEndpoint, curve: CurveClient.Keys?, timeout: TimeInterval, loop: any EventLoop,
         logger: Logger? = nil, waitingLimit: Int = ZMTPConnection.defaultWaitingLimit) {
        self.service = service
        self.waitingLimit = waitingLimit
        self.logger = logger
        self.curve = curve
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
        pending[id] = Pending(message: [Data()] + frames, triesLeft: max(1, tries), then: then)
        sendTry(id)
    }

    private func sendTry(_ id: String) {
        guard var request = pending[id] else { return }
        self.tries += 1
        request.currentTry = self.tries
        // A try that waited and is superseded stays in `waiting`, no longer current.
        if request.isWaiting { currentWaiting -= 1 }
        request.isWaiting = false
        deadlines.append((.now() + timeout, id, self.tries))
        armTimer()
        if isReady, let channel {
            channel.writeAndFlush(request.message, promise: nil)
        } else if currentWaiting < waitingLimit {
            waiting.append((id, request.currentTry))
            request.isWaiting = true
            currentWaiting += 1
        }
        pending[id] = request
        // Amortised: dropped once the entries no longer current are as many as the rest.
        if waiting.count > 2 * currentWaiting + 64 {
            waiting.removeAll { entry in pending[entry.id].map { !$0.isWaiting || $0.currentTry != entry.try } ?? true }
        }
    }

    /// `id`'s request is answered or given up: it leaves `pending` (and its waiting try is no longer current).
    private func finish(_ id: String) -> Pending? {
        guard let request = pending.removeValue(forKey: id) else { return nil }
        if request.isWaiting { currentWaiting -= 1 }
        return request
    }

    /// A reply from the service: its caller's, unless that request was answered already.
    func received(_ frames: [ByteBuffer]) {
        var frames = frames
        if frames.first?.readableBytes == 0 { frames.removeFirst() }
        let data = frames.map { Data($0.readableBytesView) }
        guard let frame0 = data.first, let id = ReplyEnvelope.requestID(of: frame0), let request = finish(id) else { return }
        request.then(.success(data))
    }

    // MARK: Deadlines

    private func armTimer() {
        guard timer == nil, let first = deadlines.first else { return }
        let bound = NIOLoopBound(self, eventLoop: loop)
        timer = loop.scheduleTask(deadline: first.at + Self.deadlineSlack) {
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
            guard let request = pending[first.id], request.currentTry == first.try else { continue }
            failTry(first.id, detail: "every try to \(service) at \(endpoint) timed out")
        }
    }

    /// The current try of `id` will get no answer: the next is sent (or waits for a
    /// connection) while tries are left, else the caller hears `unavailable`.
    private func failTry(_ id: String, detail: String) {
        guard var request = pending[id] else { return }
        request.triesLeft -= 1
        if request.triesLeft > 0 {
            pending[id] = request
            sendTry(id)
        } else {
            _ = finish(id)
            request.then(.failure(ServiceError.unavailable("the service did not answer", detail: detail)))
        }
    }

    // MARK: The connection

    func connect() {
        loop.assertInEventLoop()
        reconnect = nil
        guard !isClosed, channel == nil, !isConnecting else { return }
        isConnecting = true
        let bound = NIOLoopBound(self, eventLoop: loop)
        // NIO's client channels have TCP_NODELAY on already. (Not `.socketOption(.tcp_nodelay)`: that is
        // SOL_SOCKET's option 1, SO_DEBUG, which a container's unprivileged user may not set.)
        let bootstrap = ClientBootstrap(group: loop)
            .connectTimeout(.seconds(2))
            .channelInitializer { [curve] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        // A CURVE frame is a reply's frame, sealed: its box and MESSAGE header on top.
                        ByteToMessageHandler(ZMTPDecoder(maxFrameBytes: Self.replyLimits.bytes + 64)),
                        try ZMTPHandler(connection: bound, curve: curve),
                    ])
                }
            }
        let connecting: EventLoopFuture<any Channel> = switch endpoint {
        case .tcp(let host, let port): bootstrap.connect(host: host, port: port)
        case .ipc(let path): bootstrap.connect(unixDomainSocketPath: path)
        }
        connecting.whenComplete { result in
            let connection = bound.value
            connection.isConnecting = false
            // The channel attached itself when it became active (`attached`), and may be gone
            // already: what matters is whether one is there now.
            if connection.channel == nil { connection.scheduleReconnect() }
        }
    }

    /// A connection became active.
    func attached(_ active: any Channel) {
        guard !isClosed else { return active.close(promise: nil) }
        channel = active
        isReady = false
    }

    /// The peer's READY: what waited goes out.
    func ready() {
        guard let channel else { return }
        isReady = true
        handshakes += 1
        handshakeProblem = nil
        if refusalLogged {
            refusalLogged = false
            logger?.notice("\(service) accepts the connection again", metadata: ["endpoint": "\(endpoint)"])
        }
        for (id, number) in waiting {
            guard var request = pending[id], request.isWaiting, request.currentTry == number else { continue }
            request.isWaiting = false
            pending[id] = request
            channel.write(request.message, promise: nil)
        }
        waiting.removeAll()
        currentWaiting = 0
        channel.flush()
    }

    /// Why the handshake under way is failing, told by the handler before it closes.
    func handshakeFailed(_ problem: String) {
        handshakeProblem = problem
    }

    /// The connection ended, and a new one is made. The tries written on it will not be
    /// answered; each counts as timed out now. One that ended before its handshake did
    /// (a wrong CURVE key is dropped without a word) is logged, once until one succeeds.
    func lost(_ ended: any Channel) {
        guard channel === ended else { return }
        let wasReady = isReady
        channel = nil
        isReady = false
        scheduleReconnect()
        guard wasReady else {
            if !refusalLogged, !isClosed {
                refusalLogged = true
                logger?.warning("\(service) ended the connection during the handshake; trying again every 100 ms", metadata: [
                    "endpoint": "\(endpoint)", "mechanism": "\(curve == nil ? "NULL" : "CURVE")",
                    "problem": "\(handshakeProblem ?? "closed by the service (a CURVE key it does not accept?)")",
                ])
            }
            handshakeProblem = nil
            return
        }
        // Every request in flight had its current try written on this connection (none
        // waits while one is ready). Their callers may send more meanwhile: those wait.
        for id in Array(pending.keys) {
            failTry(id, detail: "the connection to \(service) at \(endpoint) closed before it answered")
        }
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
        currentWaiting = 0
        for request in abandoned { request.then(.failure(ServiceError.unavailable("the \(service) client closed"))) }
    }
}

/// The handshake and the traffic of one ZMTP connection, on its channel: NULL, or
/// CURVE with every frame sealed and opened here. Requests come down as their frames
/// (`[Data]`, the empty delimiter first); replies go up to the connection whole.
final class ZMTPHandler: ChannelDuplexHandler {
    typealias InboundIn = ZMTPInbound
    typealias OutboundIn = [Data]
    typealias OutboundOut = ByteBuffer

    private let connection: NIOLoopBound<ZMTPConnection>
    /// Nil for the NULL mechanism.
    private let curve: CurveClient?
    private var isReady = false
    private var assembler = MessageAssembler(maxFrames: ZMTPConnection.replyLimits.frames,
                                             maxBytes: ZMTPConnection.replyLimits.bytes)
    private static let socketType = "DEALER"

    init(connection: NIOLoopBound<ZMTPConnection>, curve keys: CurveClient.Keys?) throws {
        self.connection = connection
        curve = try keys.map(CurveClient.init)
    }

    private var mechanism: String { curve == nil ? "NULL" : "CURVE" }

    func channelActive(context: ChannelHandlerContext) {
        var greeting = context.channel.allocator.buffer(capacity: ZMTPWire.greetingBytes + 256)
        ZMTPWire.writeGreeting(mechanism: mechanism, into: &greeting)
        let first = curve?.hello()
            ?? ZMTPWire.command("READY", ZMTPWire.properties([("Socket-Type", Self.socketType)]))
        ZMTPWire.writeFrame(first, flags: ZMTPWire.command, into: &greeting)
        context.writeAndFlush(wrapOutboundOut(greeting), promise: nil)
        connection.value.attached(context.channel)
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        connection.value.lost(context.channel)
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        do {
            switch unwrapInboundIn(data) {
            case .greeting(let major, let mechanism):
                guard major >= 3, mechanism == self.mechanism else {
                    throw ZMTPProtocolError(description: "the service greets with ZMTP \(major) and \(mechanism), not \(self.mechanism)")
                }
            case .frame(let flags, let body):
                switch try ZMTPFrame.unwrap(flags: flags, body: body, isReady: isReady, open: curve.map { $0.open }) {
                case .command(let command): try self.command(command, context: context)
                case .part(let part, let more): try take(part, more: more)
                }
            }
        } catch {
            if !isReady { connection.value.handshakeFailed("\(error)") }
            context.close(promise: nil)
        }
    }

    private func take(_ frame: ByteBuffer, more: Bool) throws {
        if let message = try assembler.add(frame, more: more) { connection.value.received(message) }
    }

    private func command(_ body: ByteBuffer, context: ChannelHandlerContext) throws {
        guard let (name, data) = ZMTPWire.parseCommand(body) else {
            throw ZMTPProtocolError(description: "a command from the service has no name")
        }
        switch name {
        case "WELCOME" where !isReady:
            guard let curve else { throw ZMTPProtocolError(description: "WELCOME on a NULL connection") }
            let initiate = try curve.initiate(welcome: data, socketType: Self.socketType)
            var buffer = context.channel.allocator.buffer(capacity: ZMTPWire.frameBytes(initiate.count))
            ZMTPWire.writeFrame(initiate, flags: ZMTPWire.command, into: &buffer)
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        case "READY" where !isReady:
            try curve?.ready(data)
            isReady = true
            connection.value.ready()
        case "PING":
            // TTL (2 bytes), then the context to send back.
            var pingContext = data
            pingContext.moveReaderIndex(forwardBy: min(2, pingContext.readableBytes))
            let pong = ZMTPWire.command("PONG", Array(pingContext.readableBytesView))
            var buffer = context.channel.allocator.buffer(capacity: ZMTPWire.frameBytes(pong.count) + 64)
            if let curve {
                ZMTPWire.writeFrame(curve.seal(pong, flags: 0x02), flags: 0, into: &buffer)
            } else {
                ZMTPWire.writeFrame(pong, flags: ZMTPWire.command, into: &buffer)
            }
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
        case "ERROR":
            // The reason: its length in one byte, then its text.
            let reason = data.getInteger(at: data.readerIndex, as: UInt8.self).flatMap { length in
                data.getString(at: data.readerIndex + 1, length: min(Int(length), data.readableBytes - 1))
            } ?? ""
            throw ZMTPProtocolError(description: "the service refused the connection: ERROR \(reason)")
        default:
            break
        }
    }

    /// A request's frames, as the mechanism puts them on the wire.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let message = ZMTPWire.message(unwrapOutboundIn(data), sealedBy: curve, allocator: context.channel.allocator)
        context.write(wrapOutboundOut(message), promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !isReady { connection.value.handshakeFailed("\(error)") }
        context.close(promise: nil)
    }
}
