import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import Metrics
import NIOCore
import NIOWebSocket
import Prometheus
import ServiceClient
import ServiceKit
import ServiceLifecycle
import Wire

/// The edge: the one process that faces the internet. HTTP and WebSocket in front
/// (Hummingbird), a client of the five services behind (ZeroMQ, the edge's own
/// CURVE key); no file of its own.
public final class EdgeService {
    public let settings: EdgeSettings
    let backends: Backends
    let health: Backends
    let hub: EventHub
    let admission: SocketAdmission
    let tokens: TokenCheck
    let logger: Logger
    let routes: RouteTable
    private let router: Hummingbird.Router<EdgeContext>
    private let limiter: RateLimiter?

    public init(settings: EdgeSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        Self.bootstrapMetrics()
        backends = try Backends(settings: settings)
        // Readiness asks each service once, within a second.
        var quick = settings
        quick.serviceTimeout = 1
        quick.serviceTries = 1
        health = try Backends(settings: quick)
        hub = EventHub(settings: settings, logger: logger)
        tokens = TokenCheck(verifier: try TokenVerifier.forClient(
            environment: settings.environment, authEndpoint: settings.endpoint(of: AuthAPI.service),
            curve: try settings.curve(of: AuthAPI.service)))
        admission = SocketAdmission(hub: hub, tokens: tokens, maxSockets: settings.maxSockets,
                                    maxSocketsPerUser: settings.maxSocketsPerUser)
        limiter = settings.rateLimit.map(RateLimiter.init)

        // Middleware first, outermost first: it wraps only the routes added after it.
        let router = Hummingbird.Router(context: EdgeContext.self)
        let table = RouteTable()
        router.add(middleware: ClientMiddleware(trustedProxies: settings.trustedProxies))
        router.add(middleware: MetricsMiddleware())
        if !settings.corsOrigins.isEmpty {
            router.add(middleware: CORS(origins: Set(settings.corsOrigins)))
        }
        router.add(middleware: ProblemMiddleware(routes: table))
        if let limiter { router.add(middleware: RateLimitMiddleware(limiter: limiter)) }
        let edge = EdgeRouter(router: router, table: table)
        EdgeRoutes(backends: backends).register(into: edge)
        Self.registerOwnRoutes(into: edge, health: health)
        routes = table
        self.router = router
    }

    /// `Docs/openapi.yaml`, as built into the edge's resources.
    static var openAPIDocument: Data? {
        Bundle.module.url(forResource: "openapi", withExtension: "yaml").flatMap { try? Data(contentsOf: $0) }
    }

    /// Closes the service clients (the application does when it stops).
    func close() {
        backends.close()
        health.close()
    }

    /// The edge's own endpoints: health, metrics, the OpenAPI document, and the
    /// answer to a `GET /v1/events` that did not upgrade.
    private static func registerOwnRoutes(into routes: EdgeRouter, health: Backends) {
        routes.on(.get, "/health/live") { _, _ in
            EdgeRoutes.json(Data(#"{"status":"ok"}"#.utf8))
        }
        routes.on(.get, "/health/ready") { _, _ in
            try await readiness(health)
        }
        routes.on(.get, "/metrics") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                     body: .init(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        routes.on(.get, "/openapi.yaml") { _, _ in
            guard let document = openAPIDocument else {
                throw Problem.notFound("the OpenAPI document is not installed beside the edge")
            }
            return Response(status: .ok, headers: [.contentType: "application/yaml", .cacheControl: "public, max-age=300"],
                            body: .init(byteBuffer: ByteBuffer(bytes: document)))
        }
        // Reached by a request that did not ask to upgrade (a refused upgrade is
        // answered during the upgrade, with why).
        routes.on(.get, "/v1/events") { _, _ in
            throw Problem(status: .upgradeRequired, code: .badRequest, "/v1/events is a WebSocket: connect with an Upgrade: websocket request")
        }
    }

    /// `200` when every service answers `health` within a second, else `503` naming
    /// those that did not.
    static func readiness(_ health: Backends) async throws -> Response {
        var down: [String] = []
        await withTaskGroup(of: (String, Bool).self) { group in
            for service in ServiceEndpoints.services {
                group.addTask {
                    let reply = try? await health.client(service).callRaw(op: "\(service).health", body: .object(JSONObject()))
                    return (service, reply.map { ReplyEnvelope.successBody(of: $0.frame0) != nil } ?? false)
                }
            }
            for await (service, ok) in group where !ok { down.append(service) }
        }
        down.sort()
        let body: JSONObject = ["status": .string(down.isEmpty ? "ready" : "unavailable"), "down": .array(down.map { .string($0) })]
        guard down.isEmpty else {
            var problem = Problem(ServiceError.unavailable("not answering: \(down.joined(separator: ", "))"))
            problem.retryAfterSeconds = 5
            return problem.response
        }
        return EdgeRoutes.json(JSONWriter.data(.object(body)))
    }

    /// An upgraded socket mostly waits: a small first read buffer (NIO keeps one per
    /// channel, 2 KB by default), and TCP keepalive to find a peer that vanished
    /// (a phone out of coverage) where a ping task per socket would hold kilobytes.
    static func keepSocketLean(_ channel: any Channel, listener: ClientFrames) async {
        // One trip to the channel's event loop for all of it.
        _ = try? await channel.eventLoop.submit {
            // swift-websocket keeps pongs to itself: a handler after the frame decoder hears them.
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<WebSocketFrameDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(listener, position: .after(decoder))
            guard let options = channel.syncOptions else { return }
            let tcp = { (option: Int32) in ChannelOptions.Types.SocketOption(level: .tcp, name: NIOBSDSocket.Option(rawValue: option)) }
            try options.setOption(ChannelOptions.recvAllocator, value: AdaptiveRecvByteBufferAllocator(minimum: 64, initial: 256, maximum: 64 * 1024))
            try options.setOption(ChannelOptions.socketOption(.so_keepalive), value: 1)
            try options.setOption(tcp(TCP_KEEPIDLE), value: 60)
            try options.setOption(tcp(TCP_KEEPINTVL), value: 10)
            try options.setOption(tcp(TCP_KEEPCNT), value: 3)
        }.get()
    }

    /// The Hummingbird application: HTTP/1.1 with the WebSocket upgrade of
    /// `/v1/events`, TLS when a certificate is given.
    public func application() throws -> some ApplicationProtocol {
        let socket = EventSocket(hub: hub, tokens: tokens, logger: logger)
        let hub = self.hub, admission = self.admission, limiter = self.limiter, trusted = settings.trustedProxies
        let deadlines = (headers: TimeAmount.seconds(Int64(settings.headerTimeout)), body: TimeAmount.seconds(Int64(settings.bodyTimeout)))
        // A connection with no request for 30 s is closed (EDGE.md); a request's head and
        // body have their own deadlines; a first head is guarded by GuardedHTTPChannel.
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [RequestDeadlines(headers: deadlines.headers, body: deadlines.body), ClosingResponses()],
            idleTimeout: .seconds(30),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: EdgeSettings.headerBytes, maxHeaderListSize: EdgeSettings.headerBytes,
                                            maxHeaderFieldCount: 100))
        let webSocket = WebSocketServerConfiguration(maxFrameSize: 64 * 1024, autoPing: .disabled,
                                                     closeTimeout: .seconds(5), validateUTF8: true)
        let shouldUpgrade: @Sendable (HTTPRequest, any Channel, Logger) async throws
            -> ShouldUpgradeResult<WebSocketDataHandler<HTTP1WebSocketUpgradeChannel.Context>> = { head, channel, _ in
            // Only /v1/events upgrades. An upgrade refused (over the rate limit or a
            // socket limit, or with a bad token) is answered with why: 429 or 401.
            guard head.path?.split(separator: "?").first == "/v1/events" else { return .dontUpgrade }
            let client = ClientMiddleware.client(of: head.headerFields, peer: channel.remoteAddress?.ipAddress ?? "unknown",
                                                 trusting: trusted)
            var refusal: Problem?
            if let limiter, let wait = limiter.take(client) {
                refusal = Problem(ServiceError.rateLimited("too many requests from this address; slow down",
                                                           retryAfterMs: Int((wait * 1000).rounded(.up))))
            }
            var caller: Caller?
            if refusal == nil {
                switch await admission.check(head.headerFields) {
                case .refuse(let problem): refusal = problem
                case .admit(let admitted): caller = admitted
                }
            }
            if refusal == nil, !hub.admitSocket() { refusal = SocketAdmission.edgeFull }
            if let refusal {
                await FirstRequestGuard.answer(refusal.http1Bytes, on: channel)
                return .dontUpgrade
            }
            return .upgrade([:]) { [caller] inbound, outbound, _ in
                defer { hub.socketClosed() }
                // Events go to the upgraded channel's pipeline from whichever thread has
                // them, through the WebSocket frame encoder; ending the input ends the
                // socket's read loop, as swift-websocket's own cancellation does.
                let writer: EventHub.Outbox.Writer = { message, written in
                    let frame = switch message {
                    case .text(let text): WebSocketFrame(fin: true, opcode: .text, data: channel.allocator.buffer(string: text))
                    case .ping: WebSocketFrame(fin: true, opcode: .ping, data: channel.allocator.buffer(capacity: 0))
                    }
                    channel.writeAndFlush(frame).whenComplete { _ in written() }
                }
                let outbox = EventSocket.outbox(writer: writer, endReading: { channel.close(mode: .input, promise: nil) })
                await Self.keepSocketLean(channel, listener: ClientFrames(outbox: outbox))
                await socket.run(inbound: inbound, outbound: outbound, caller: caller, outbox: outbox)
            }
        }
        let configuration = HTTP1WebSocketUpgradeChannel.Configuration(http1: http1, ws: webSocket)
        var server = HTTPServerBuilder { responder in
            GuardedHTTPChannel(base: HTTP1WebSocketUpgradeChannel(responder: responder, configuration: configuration,
                                                                  shouldUpgrade: shouldUpgrade),
                               headerDeadline: deadlines.headers, headerBytes: EdgeSettings.headerBytes)
        }
        if let certificate = settings.tlsCertificate, let key = settings.tlsKey {
            let tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            server = try .tls(server, tlsConfiguration: tls)
        }
        return Application(router: router, server: server,
                           configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: "hereabouts-edge"),
                           services: [EventsService(hub: hub, backends: [backends, health])],
                           onServerRunning: { [logger, settings] channel in
                               logger.info("edge listening", metadata: ["url": "\(settings.url)",
                                                                        "port": "\(channel.localAddress?.port ?? settings.port)"])
                           },
                           logger: logger)
    }

    // MARK: Metrics

    static let registry = PrometheusCollectorRegistry()
    private static let bootstrap: Void = MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

    /// swift-metrics takes one factory per process: the first edge made sets it.
    private static func bootstrapMetrics() { _ = bootstrap }
}

/// Starts following the services' events with the application, and closes the
/// service clients when it stops.
private struct EventsService: Service {
    let hub: EventHub
    let backends: [Backends]

    func run() async throws {
        hub.start()
        try? await gracefulShutdown()
        hub.stop()
        backends.forEach { $0.close() }
    }
}

/// Every frame a socket's client sends, pongs included, as a sign that it is there
/// (the hub closes a socket silent for a minute); the frames pass on unchanged.
final class ClientFrames: ChannelInboundHandler, Sendable {
    typealias InboundIn = WebSocketFrame
    typealias InboundOut = WebSocketFrame
    let outbox: EventHub.Outbox

    init(outbox: EventHub.Outbox) { self.outbox = outbox }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        outbox.heard()
        context.fireChannelRead(data)
    }
}
