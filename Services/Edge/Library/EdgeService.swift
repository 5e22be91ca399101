import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import Metrics
import NIOCore
import NIOWebSocket
import Prometheus
import ServiceClient
import ServiceCore
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
    /// The routes answered on the event loops, below Hummingbird's router.
    let passed: PassedRoutes
    private let router: Hummingbird.Router<EdgeContext>
    private let limiter: RateLimiter?

    public init(settings: EdgeSettings, logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        Self.bootstrapMetrics()
        backends = try Backends(settings: settings, logger: logger)
        // Readiness asks each service once, within a second.
        var quick = settings
        quick.serviceTimeout = 1
        quick.serviceTries = 1
        health = try Backends(settings: quick)
        hub = EventHub(settings: settings, logger: logger, watches: SocketWatches(geo: backends.client(GeoAPI.service), renewAfter: settings.watchRenewal))
        tokens = TokenCheck(verifier: try TokenVerifier.forClient(
            environment: settings.environment, authEndpoint: settings.endpoint(of: AuthAPI.service),
            curve: try settings.curve(of: AuthAPI.service)))
        admission = SocketAdmission(hub: hub, tokens: tokens, maxSockets: settings.maxSockets,
                                    maxSocketsPerUser: settings.maxSocketsPerUser)
        limiter = settings.rateLimit.map(RateLimiter.init)

        let built = EdgeRouter.build(settings: settings, backends: backends, health: health, hub: hub, limiter: limiter, logger: logger)
        router = built.router
        routes = built.table
        passed = built.passed
    }

    /// The `Server` of every answer.
    static let serverName = "hereabouts-edge"

    /// `Docs/openapi.yaml`, as built into the edge's resources.
    static var openAPIDocument: Data? {
        Bundle.module.url(forResource: "openapi", withExtension: "yaml").flatMap { try? Data(contentsOf: $0) }
    }

    /// Closes the service clients (the application does when it stops).
    func close() {
        backends.close()
        health.close()
    }

    /// The edge's own endpoints: health, the OpenAPI document, and the answer to a
    /// `GET /v1/events` that did not upgrade. (`/metrics` has a listener of its own.)
    static func registerOwnRoutes(into routes: EdgeRouter, health: Backends) {
        routes.on(.get, "/health/live") { _, _ in
            EdgeRoutes.json(Data(#"{"status":"ok"}"#.utf8))
        }
        routes.on(.get, "/health/ready") { _, _ in
            try await readiness(health)
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
            throw problem
        }
        return EdgeRoutes.json(JSONWriter.data(.object(body)))
    }

    /// The Hummingbird application: HTTP/1.1 with the WebSocket upgrade of
    /// `/v1/events`, TLS when a certificate is given.
    public func application() throws -> some ApplicationProtocol {
        let socket = EventSocket(hub: hub, tokens: tokens, logger: logger)
        let hub = self.hub, admission = self.admission, limiter = self.limiter, trusted = settings.trustedProxies, passed = self.passed
        let deadlines = (headers: TimeAmount.seconds(Int64(settings.headerTimeout)), body: TimeAmount.seconds(Int64(settings.bodyTimeout)))
        // A connection that sends nothing for 30 s is closed (EDGE.md): between requests,
        // and in the middle of a body too (Hummingbird's idle timeout counts reads and
        // writes, not requests); a request's head and body have their own deadlines; a
        // first head is guarded by EdgeChannel.
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [MalformedHeads(), RequestDeadlines(headers: deadlines.headers, body: deadlines.body),
                                        ClosingResponses()],
            idleTimeout: .seconds(30),
            httpDecoderConfiguration: .init(maxHeaderFieldSize: EdgeSettings.headerBytes, maxHeaderListSize: EdgeSettings.headerBytes,
                                            maxHeaderFieldCount: 100))
        // A /v1/events upgrade (EdgeChannel upgrades no other path) refused over the rate
        // limit or a socket limit, or for a bad token, is answered with why: 429 or 401.
        let decide: @Sendable (HTTPRequest, any Channel) async -> EdgeChannel.UpgradeDecision = { head, channel in
            let client = ClientAddress.budgetKey(ClientMiddleware.client(of: head.headerFields,
                                                                          peer: channel.remoteAddress?.ipAddress ?? "unknown", trusting: trusted))
            var refusal = limiter.flatMap { RateLimitMiddleware.refusal(by: $0, of: client) }
            var caller: SocketSignIn?
            if refusal == nil {
                switch await admission.check(head.headerFields) {
                case .refuse(let problem): refusal = problem
                case .admit(let admitted): caller = admitted
                }
            }
            if refusal == nil { refusal = hub.admitSocket(from: client) }
            if let refusal {
                await FirstRequestGuard.answer(refusal.http1Bytes, on: channel)
                return .refused
            }
            // The place taken is given back however the connection ends, upgraded or not.
            channel.closeFuture.whenComplete { _ in hub.socketClosed(from: client) }
            return .open(caller, language: head.headerFields[.acceptLanguage].flatMap { LanguageTag.preferred(acceptLanguage: $0) })
        }
        var server = HTTPServerBuilder { responder in
            EdgeChannel(responder: responder, http1: http1, headerDeadline: deadlines.headers, headerBytes: EdgeSettings.headerBytes,
                        passed: passed, events: socket, decide: decide)
        }
        if let certificate = settings.tlsCertificate, let key = settings.tlsKey {
            let tls = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMFile(certificate).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(file: key, format: .pem)))
            server = try .tls(server, tlsConfiguration: tls)
        }
        return Application(router: router, server: server,
                           configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: Self.serverName),
                           services: [EventsService(hub: hub, backends: [backends, health])],
                           onServerRunning: { [logger, settings] channel in
                               logger.info("edge listening", metadata: ["url": "\(settings.url)",
                                                                        "port": "\(channel.localAddress?.port ?? settings.port)"])
                           },
                           logger: logger)
    }

    // MARK: Metrics

    /// `GET /metrics` (Prometheus text format) on the metrics address, nothing else;
    /// nil when the settings turn it off.
    public func metricsApplication() -> (any Service)? {
        guard let (host, port) = settings.metricsListen else { return nil }
        let router = Hummingbird.Router()
        let health = self.health
        router.get("/metrics") { _, _ in
            await Self.recordMail(from: health)
            await Self.recordPushes(from: health)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                            body: .init(byteBuffer: ByteBuffer(bytes: Self.registry.emitToBuffer())))
        }
        let application = Application(router: router, configuration: .init(address: .hostname(host, port: port), serverName: "hereabouts-edge"),
                                      onServerRunning: { [logger] channel in
                                          logger.info("metrics listening", metadata: ["port": "\(channel.localAddress?.port ?? port)"])
                                      },
                                      logger: logger)
        return MetricsServer(application: application, address: "\(host):\(port)", logger: logger)
    }

    /// Runs the edge, and its metrics listener beside it, until SIGTERM or SIGINT.
    public func run() async throws {
        let services: [any Service] = [try application()] + (metricsApplication().map { [$0] } ?? [])
        let group = ServiceGroup(configuration: .init(services: services.map { .init(service: $0) },
                                                      gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    static let registry = PrometheusCollectorRegistry()

    /// Auth's mail outbox, asked at each scrape (a one-second call): messages waiting,
    /// the oldest one's age, and those given up and sent in the last day. Left as they
    /// were when auth does not answer.
    static func recordMail(from health: Backends) async {
        guard let mail = try? await health.client(AuthAPI.service).call(AuthAPI.health, Empty()).value.mail else { return }
        let gauge = gauges(of: "mail")
        gauge("pending", "messages", "Account mail not delivered yet").set(Double(mail.pending))
        gauge("oldest_pending", "seconds", "How long the oldest undelivered mail has waited").set(mail.oldestPendingSeconds ?? 0)
        gauge("failed_last_day", "messages", "Account mail given up in the last 24 hours").set(Double(mail.failedLastDay))
        gauge("sent_last_day", "messages", "Account mail delivered in the last 24 hours").set(Double(mail.sentLastDay))
    }

    /// Chat's push outbox, asked at each scrape like auth's mail: pushes waiting, the
    /// oldest one's age, and since chat started, those delivered, given up, and the
    /// devices forgotten.
    static func recordPushes(from health: Backends) async {
        guard let push = try? await health.client(ChatAPI.service).call(ChatAPI.health, Empty()).value.push else { return }
        let gauge = gauges(of: "push")
        gauge("pending", "pushes", "Pushes not delivered yet").set(Double(push.pending))
        gauge("oldest_pending", "seconds", "How long the oldest undelivered push has waited").set(push.oldestPendingSeconds ?? 0)
        gauge("sent", "pushes", "Pushes delivered since chat started").set(Double(push.sent))
        gauge("failed", "pushes", "Pushes given up since chat started").set(Double(push.failed))
        gauge("removed", "devices", "Devices forgotten since chat started (gone at their push service, or signed out)").set(Double(push.removed))
    }

    /// A maker of `hereabouts_<subsystem>_<name>_<unit>` gauges.
    private static func gauges(of subsystem: String) -> (String, String, String) -> Prometheus.Gauge {
        { name, unit, help in
            registry.makeGauge(descriptor: MetricNameDescriptor(namespace: "hereabouts", subsystem: subsystem, metricName: name,
                                                                unitName: unit, helpText: help))
        }
    }
    private static let bootstrap: Void = MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))

    /// swift-metrics takes one factory per process: the first edge made sets it.
    private static func bootstrapMetrics() { _ = bootstrap }
}

/// The metrics listener: one that cannot listen (its port taken) is logged and leaves
/// the edge serving apps without `/metrics`, rather than taking the edge down.
private struct MetricsServer: Service {
    let application: any ApplicationProtocol
    let address: String
    let logger: Logger

    func run() async throws {
        do {
            try await application.run()
        } catch {
            logger.error("metrics could not listen; /metrics is not served", metadata: ["address": "\(address)", "error": "\(error)"])
            try? await gracefulShutdown()
        }
    }
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
