import Foundation
import Logging
import NIOCore
import NIOPosix
import Synchronization
import ZeroMQ

/// A request as a ROUTER socket would hand it on: the connection's routing id (five
/// bytes, as libzmq makes them), then the frames as the peer sent them (a REQ's empty
/// delimiter first).
public struct ZMTPServerRequest: Sendable {
    public var frames: [Data]
    /// The Z85 public key the peer was admitted with under CURVE; nil for NULL.
    public var peerKey: String?
    /// Frames past the server's limits were dropped unread.
    public var truncated: Bool
}

/// A service's ROUTER, written by NIO: ZMTP 3.1 over TCP or a Unix socket, NULL or
/// CURVE, for libzmq's REQ and DEALER clients and the edge's own (`ZMTPLink`).
///
/// Through a libzmq ROUTER each request crossed from libzmq's I/O thread to the
/// thread that answered it and its reply back again: two thread wake-ups a request;
/// geo spent 71 µs of CPU a search that way on two cores, 61 µs on this (BENCHMARKS.md,
/// Geo, "The services' ROUTER").
/// Here each connection lives on one event loop, which reads a request, hands it to
/// `handler` on the same thread and writes what the handler answers at once; a request
/// the handler passes on (to a worker thread) is answered later through `send`, which
/// finds the connection by the routing id at the front of the reply.
///
/// Like a ROUTER it drops a reply whose peer is gone, and a peer that stops answering
/// its heartbeats. Unlike one it stops reading from a connection whose replies the
/// peer does not take, or that has `maxUnanswered` requests waiting for workers, so one
/// client cannot fill the server's memory.
public final class ZMTPServer: Sendable {
    public struct Configuration: Sendable {
        /// `tcp://host:port` (`*` for every address, port `*` or 0 for a free one) or `ipc:///path`.
        public var endpoint: String
        /// Event loops: connections are spread over them, and so is the handler's work.
        public var threads: Int
        /// The server's Z85 secret key and the client keys it admits; nil for NULL.
        public var curve: (secretKey: String, allowedKeys: [String])?
        /// Frames and bytes kept of one request; more marks it truncated.
        public var maxFrames: Int
        public var maxBytes: Int
        /// A frame larger than this ends the connection (libzmq's `ZMQ_MAXMSGSIZE`).
        public var maxFrameBytes: Int
        public var heartbeatInterval: TimeAmount = .seconds(5)
        public var heartbeatTimeout: TimeAmount = .seconds(15)
        /// Requests of one connection handed on and not yet answered before it is read no more.
        public var maxUnanswered: Int = 10_000

        public init(endpoint: String, threads: Int, curve: (secretKey: String, allowedKeys: [String])?,
                    maxFrames: Int, maxBytes: Int, maxFrameBytes: Int) {
            self.endpoint = endpoint
            self.threads = threads
            self.curve = curve
            self.maxFrames = maxFrames
            self.maxBytes = maxBytes
            self.maxFrameBytes = maxFrameBytes
        }
    }

    /// Runs on the connection's event loop: the reply's frames (routing id first) to
    /// write now, or nil when the request is answered later through `send`.
    public typealias Handler = @Sendable (ZMTPServerRequest) -> [Data]?

    let configuration: Configuration
    let curveKeys: CurveServer.Keys?
    let handler: Handler
    let logger: Logger
    private let group: MultiThreadedEventLoopGroup
    private let listener = Mutex<(any Channel)?>(nil)
    private let connections = Mutex<[UInt32: any Channel]>([:])
    private let lastConnection = Atomic<UInt32>(0)
    private let bound = Mutex<String?>(nil)

    public init(configuration: Configuration, logger: Logger, handler: @escaping Handler) throws {
        if let curve = configuration.curve {
            guard let secretKey = Z85.decode(curve.secretKey), secretKey.count == 32,
                  let publicKey = try? CurveKeyPair.publicKey(forSecretKey: curve.secretKey), let publicBytes = Z85.decode(publicKey)
            else { throw ZMTPProtocolError(description: "the server's CURVE secret key is not a 32-byte Z85 key") }
            var allowed = Set<[UInt8]>()
            for key in curve.allowedKeys {
                guard let bytes = Z85.decode(key), bytes.count == 32 else {
                    throw ZMTPProtocolError(description: "an allowed CURVE key is not a 32-byte Z85 key: \(key)")
                }
                allowed.insert(Array(bytes))
            }
            curveKeys = CurveServer.Keys(publicKey: Array(publicBytes), secretKey: Array(secretKey), allowed: allowed)
        } else {
            curveKeys = nil
        }
        self.configuration = configuration
        self.handler = handler
        self.logger = logger
        group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
    }

    /// The endpoint clients connect to, with the port a `tcp://…:*` bind was given.
    public var endpoint: String { bound.withLock { $0 } ?? configuration.endpoint }

    /// Binds and starts accepting connections.
    public func start() throws {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .serverChannelOption(.backlog, value: 256)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        // A CURVE frame is the frame sealed: its box and MESSAGE header on top.
                        ByteToMessageHandler(ZMTPDecoder(maxFrameBytes: configuration.maxFrameBytes + 64)),
                        ZMTPServerConnection(server: self),
                    ])
                }
            }
        let channel: any Channel
        switch try Self.bindAddress(configuration.endpoint) {
        case .tcp(let host, let port):
            channel = try bootstrap.bind(host: host, port: port).wait()
            let port = channel.localAddress?.port ?? port
            let shown = configuration.endpoint.hasPrefix("tcp://*:") ? "0.0.0.0" : host
            bound.withLock { $0 = "tcp://\(shown.contains(":") ? "[\(shown)]" : shown):\(port)" }
        case .ipc(let path):
            channel = try bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).wait()
            bound.withLock { $0 = "ipc://\(path)" }
        }
        listener.withLock { $0 = channel }
    }

    /// Where to bind: a host and port (0 for any), or a Unix socket's path.
    static func bindAddress(_ endpoint: String) throws -> ZMTPEndpoint {
        if endpoint.hasPrefix("tcp://") {
            let address = endpoint.dropFirst("tcp://".count)
            if let colon = address.lastIndex(of: ":") {
                let portText = address[address.index(after: colon)...]
                var host = String(address[..<colon])
                if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
                if host == "*" { host = "0.0.0.0" }
                if let port = portText == "*" ? 0 : Int(portText), (0...65_535).contains(port), !host.isEmpty {
                    return .tcp(host: host, port: port)
                }
            }
        } else if let parsed = ZMTPEndpoint(endpoint), case .ipc = parsed {
            return parsed
        }
        throw ZMTPProtocolError(description: "\(endpoint) is not a tcp://host:port or ipc:// endpoint to bind")
    }

    /// Sends a reply: its first frame the routing id of the request's connection. A
    /// reply whose connection is gone is dropped, as a ROUTER drops it.
    public func send(_ frames: [Data]) {
        guard let id = frames.first.flatMap(Self.connectionID), let channel = connections.withLock({ $0[id] }) else { return }
        channel.writeAndFlush(Array(frames.dropFirst()), promise: nil)
    }

    /// Stops accepting connections; those open stay until `close`.
    public func stopAccepting() {
        let channel = listener.withLock { channel in
            defer { channel = nil }
            return channel
        }
        try? channel?.close().wait()
    }

    /// Closes every connection and stops the event loops. Not from one of them.
    public func close() {
        stopAccepting()
        let open = connections.withLock { Array($0.values) }
        for channel in open { try? channel.close().wait() }
        try? group.syncShutdownGracefully()
    }

    // MARK: Connections

    func register(_ channel: any Channel) -> Data {
        let id = lastConnection.wrappingAdd(1, ordering: .relaxed).newValue
        connections.withLock { $0[id] = channel }
        return Data([0]) + withUnsafeBytes(of: id.bigEndian) { Data($0) }
    }

    func unregister(_ routingID: Data) {
        guard let id = Self.connectionID(routingID) else { return }
        connections.withLock { _ = $0.removeValue(forKey: id) }
    }

    private static func connectionID(_ routingID: Data) -> UInt32? {
        guard routingID.count == 5, routingID.first == 0 else { return nil }
        return routingID.dropFirst().reduce(0) { $0 << 8 | UInt32($1) }
    }
}

/// One client's connection on its event loop: the handshake (NULL, or CURVE with every
/// frame sealed and opened here), its requests to the server's handler, and the
/// replies (the frames after the routing id) back.
final class ZMTPServerConnection: ChannelDuplexHandler {
    typealias InboundIn = ZMTPInbound
    typealias OutboundIn = [Data]
    typealias OutboundOut = ByteBuffer

    private let server: ZMTPServer
    private let curve: CurveServer?
    private var routingID = Data()
    private var isReady = false
    private var peerKey: String?
    private var assembler: MessageAssembler
    /// Requests handed to the server's handler and not yet answered.
    private var unanswered = 0
    /// A read NIO asked for and held back while the peer has too much outstanding.
    private var heldRead = false
    private var lastHeard = NIODeadline.now()
    private var heartbeat: RepeatedTask?
    /// Whether replies were written since the last flush (flushed when a read ends).
    private var unflushed = false

    private static let peerTypes: Set<String> = ["REQ", "DEALER"]

    init(server: ZMTPServer) {
        self.server = server
        curve = server.curveKeys.map(CurveServer.init)
        assembler = MessageAssembler(maxFrames: server.configuration.maxFrames, maxBytes: server.configuration.maxBytes)
    }

    private var mechanism: String { curve == nil ? "NULL" : "CURVE" }

    func channelActive(context: ChannelHandlerContext) {
        routingID = server.register(context.channel)
        var greeting = context.channel.allocator.buffer(capacity: ZMTPWire.greetingBytes)
        ZMTPWire.writeGreeting(mechanism: mechanism, asServer: curve != nil, into: &greeting)
        context.writeAndFlush(wrapOutboundOut(greeting), promise: nil)
        let interval = server.configuration.heartbeatInterval, timeout = server.configuration.heartbeatTimeout
        let bound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        heartbeat = context.eventLoop.scheduleRepeatedTask(initialDelay: interval, delay: interval) { _ in
            let (connection, context) = bound.value
            connection.beat(context: context, interval: interval, timeout: timeout)
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        heartbeat?.cancel()
        server.unregister(routingID)
        context.fireChannelInactive()
    }

    /// A peer silent past the timeout is dropped; one silent for an interval is sent a PING
    /// (which libzmq answers with PONG), so a live idle client is not.
    private func beat(context: ChannelHandlerContext, interval: TimeAmount, timeout: TimeAmount) {
        let silent = NIODeadline.now() - lastHeard
        if silent >= timeout {
            context.close(promise: nil)
        } else if silent >= interval, isReady {
            // TTL in deciseconds, then no context.
            let deciseconds = UInt16(clamping: timeout.nanoseconds / 100_000_000)
            writeCommand(ZMTPWire.command("PING", [UInt8(deciseconds >> 8), UInt8(deciseconds & 0xFF)]), context: context)
            context.flush()
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        lastHeard = .now()
        do {
            switch unwrapInboundIn(data) {
            case .greeting(let major, let mechanism):
                guard major >= 3, mechanism == self.mechanism else {
                    throw ZMTPProtocolError(description: "a client greets with ZMTP \(major) and \(mechanism), not \(self.mechanism)")
                }
            case .frame(let flags, let body):
                switch try ZMTPFrame.unwrap(flags: flags, body: body, isReady: isReady, open: curve.map { $0.open }) {
                case .command(let command): try self.command(command, context: context)
                case .part(let part, let more): take(part, more: more, context: context)
                }
            }
        } catch is CurveRefusal {
            refuse("400", context: context)
        } catch {
            server.logger.debug("dropped a client's connection", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if unflushed {
            unflushed = false
            context.flush()
        }
        context.fireChannelReadComplete()
    }

    /// Ends the handshake with ERROR, as libzmq does for a key its ZAP handler refuses.
    private func refuse(_ reason: String, context: ChannelHandlerContext) {
        server.logger.notice("refused a client's CURVE key", metadata: [
            "key": "\(curve?.clientKey.flatMap { Z85.encode(Data($0)) } ?? "-")"])
        var buffer = context.channel.allocator.buffer(capacity: 64)
        ZMTPWire.writeFrame(ZMTPWire.error(reason), flags: ZMTPWire.command, into: &buffer)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(buffer)).whenComplete { _ in channel.close(promise: nil) }
    }

    private func command(_ body: ByteBuffer, context: ChannelHandlerContext) throws {
        guard let (name, data) = ZMTPWire.parseCommand(body) else {
            throw ZMTPProtocolError(description: "a command from the client has no name")
        }
        switch name {
        case "HELLO" where !isReady:
            guard let curve else { throw ZMTPProtocolError(description: "HELLO on a NULL connection") }
            writeCommand(try curve.welcome(hello: data), context: context)
            context.flush()
        case "INITIATE" where !isReady:
            guard let curve else { throw ZMTPProtocolError(description: "INITIATE on a NULL connection") }
            try checkSocketType(try curve.accept(initiate: data))
            peerKey = curve.clientKey.flatMap { Z85.encode(Data($0)) }
            var buffer = context.channel.allocator.buffer(capacity: 128)
            ZMTPWire.writeFrame(curve.ready(metadata: [("Socket-Type", "ROUTER")]), flags: ZMTPWire.command, into: &buffer)
            context.writeAndFlush(wrapOutboundOut(buffer), promise: nil)
            isReady = true
        case "READY" where !isReady && curve == nil:
            guard let metadata = ZMTPWire.parseProperties(data.readableBytesView) else {
                throw ZMTPProtocolError(description: "the client's metadata is malformed")
            }
            try checkSocketType(metadata)
            writeCommand(ZMTPWire.command("READY", ZMTPWire.properties([("Socket-Type", "ROUTER")])), context: context)
            context.flush()
            isReady = true
        case "PING" where isReady:
            // TTL (2 bytes), then the context to send back.
            var pingContext = data
            pingContext.moveReaderIndex(forwardBy: min(2, pingContext.readableBytes))
            writeCommand(ZMTPWire.command("PONG", Array(pingContext.readableBytesView)), context: context)
            context.flush()
        case "PONG" where isReady:
            break
        default:
            throw ZMTPProtocolError(description: "the client sent \(name) out of turn")
        }
    }

    private func checkSocketType(_ metadata: [(name: String, value: [UInt8])]) throws {
        let type = metadata.first { $0.name.lowercased() == "socket-type" }.map { String(decoding: $0.value, as: UTF8.self) }
        guard let type, Self.peerTypes.contains(type) else {
            throw ZMTPProtocolError(description: "a \(type ?? "nameless") socket cannot talk to a ROUTER")
        }
    }

    /// A command as the mechanism puts it on the wire (not flushed).
    private func writeCommand(_ command: [UInt8], context: ChannelHandlerContext) {
        var buffer = context.channel.allocator.buffer(capacity: ZMTPWire.frameBytes(command.count) + 64)
        if isReady, let curve {
            ZMTPWire.writeFrame(curve.seal(command, flags: 0x02), flags: 0, into: &buffer)
        } else {
            ZMTPWire.writeFrame(command, flags: ZMTPWire.command, into: &buffer)
        }
        context.write(wrapOutboundOut(buffer), promise: nil)
    }

    /// A message frame; a whole request goes to the handler.
    private func take(_ frame: ByteBuffer, more: Bool, context: ChannelHandlerContext) {
        guard let (frames, truncated) = assembler.addKeepingWithin(frame, more: more) else { return }
        var message = [Data]()
        message.reserveCapacity(frames.count + 1)
        message.append(routingID)
        for frame in frames { message.append(Data(frame.readableBytesView)) }
        unanswered += 1
        guard let reply = server.handler(ZMTPServerRequest(frames: message, peerKey: peerKey, truncated: truncated)) else { return }
        writeReply(reply.dropFirst(), context: context, promise: nil)
        unflushed = true
    }

    /// A reply's frames, as the mechanism puts them on the wire.
    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        writeReply(unwrapOutboundIn(data)[...], context: context, promise: promise)
    }

    private func writeReply(_ frames: ArraySlice<Data>, context: ChannelHandlerContext, promise: EventLoopPromise<Void>?) {
        let message = ZMTPWire.message(frames, sealedBy: curve, allocator: context.channel.allocator)
        context.write(wrapOutboundOut(message), promise: promise)
        unanswered -= 1
        resumeReadingIfHeld(context: context)
    }

    // MARK: Reading no more than the peer takes

    private func mayRead(_ context: ChannelHandlerContext) -> Bool {
        unanswered < server.configuration.maxUnanswered && context.channel.isWritable
    }

    func read(context: ChannelHandlerContext) {
        guard mayRead(context) else {
            heldRead = true
            return
        }
        context.read()
    }

    private func resumeReadingIfHeld(context: ChannelHandlerContext) {
        guard heldRead, mayRead(context) else { return }
        heldRead = false
        context.read()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        resumeReadingIfHeld(context: context)
        context.fireChannelWritabilityChanged()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        server.logger.debug("dropped a client's connection", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }
}
