import Contracts
import Foundation
import Logging
import ServiceClient
import Synchronization
import Wire
import ZeroMQ
import ZMTP

/// A service's request server.
///
/// Front threads (the event loops of the ROUTER clients connect to, `ZMTPServer`)
/// read each request as it arrives and its envelope, and answer at once what needs no
/// waiting: malformed requests, unknown ops, and ops routed to the front lane (reads
/// from memory), so those cost no hand-over between threads. Everything else goes
/// onto a queue that idle worker threads take from, or, for ops routed to a named
/// pool (password hashing), onto that pool's own queue and threads, so slow work
/// never occupies the threads that answer `health`. Workers and pools send their
/// replies themselves, to the connection the request came on.
///
/// Most services run one front thread. Geo runs one per core: its searches are
/// front-lane reads under the index's read lock, so they run side by side.
public final class Server: Sendable {
    /// Fills what a service adds to its `health` reply.
    public typealias HealthDetails = @Sendable (inout HealthReply) -> Void

    public struct Configuration: Sendable {
        public var service: String
        /// Where clients connect: `tcp://127.0.0.1:7101`, `ipc:///…`, or `tcp://127.0.0.1:*`
        /// for a free port (read the bound one from `endpoint`).
        public var endpoint: String
        /// Threads that take requests and answer front-lane ops; more than one only
        /// where the front lane's handlers may run side by side.
        public var frontThreads: Int
        public var workers: Int
        /// Extra pools by name, for routes that name them.
        public var pools: [String: PoolConfiguration]
        /// How long `stop` waits for requests already received to be answered.
        public var drainTimeout: TimeInterval
        /// Per-user writes per second for rate-limited routes; nil for no limit.
        public var rateLimit: RateLimiter.Policy?
        /// CURVE on the ROUTER socket; nil for plaintext.
        public var security: ServerSecurity?

        public init(service: String, endpoint: String, frontThreads: Int = 1, workers: Int = 2,
                    pools: [String: PoolConfiguration] = [:],
                    drainTimeout: TimeInterval = 0.7,
                    rateLimit: RateLimiter.Policy? = nil, security: ServerSecurity? = nil) {
            self.rateLimit = rateLimit
            self.security = security
            self.service = service
            self.endpoint = endpoint
            self.frontThreads = frontThreads
            self.workers = workers
            self.pools = pools
            self.drainTimeout = drainTimeout
        }
    }

    public struct PoolConfiguration: Sendable {
        public var threads: Int
        /// Requests waiting beyond this are refused with `rate_limited`.
        public var queueCapacity: Int

        public init(threads: Int, queueCapacity: Int) {
            self.threads = threads
            self.queueCapacity = queueCapacity
        }
    }

    public let configuration: Configuration
    private let pipeline: RequestPipeline
    private let workQueue = FairQueue<Job>(laneCapacity: .max)
    private let logger: Logger
    private let state = Mutex<RunState>(.idle)
    private let boundEndpoint = Mutex<String?>(nil)
    /// Requests handed to workers and not yet answered.
    private let pending = Atomic<Int>(0)

    private enum RunState {
        case idle
        case running(router: ZMTPServer, workers: [ServiceThread])
        case stopped
    }

    /// - Parameters:
    ///   - verifier: checks tokens; nil refuses every request that carries one.
    ///   - callerCheck: a further check of a verified caller (a revoked session, a
    ///     deleted user), throwing `unauthenticated`.
    ///   - followers: the feeds the service follows, for `<service>.ready`.
    ///   - healthDetails: what the service adds to `<service>.health` (from memory: it answers on the front thread).
    public init(configuration: Configuration, router: Router, database: ServiceDatabase?,
                verifier: TokenVerifier?, callerCheck: CallerCheck? = nil, followers: [any FeedFollower] = [],
                healthDetails: HealthDetails? = nil, logger: Logger) {
        var router = router
        let startedAt = Date()
        let service = configuration.service
        router.read(HealthAPI.health(service), lane: .front) { _, _ in
            var health = HealthReply(service: service, version: HereaboutsVersion.current,
                                     uptimeSeconds: (Date().timeIntervalSince(startedAt) * 10).rounded() / 10,
                                     memory: ProcessMemory.current(), storage: database?.storage())
            healthDetails?(&health)
            return health
        }
        if let database {
            // On a worker: a large file takes seconds to copy.
            router.read(BackupAPI.backup(service)) { request, _ in
                try database.backup(name: request.name, service: service)
            }
            router.operatorsOnly(BackupAPI.backup(service))
        }
        router.read(HealthAPI.ready(service)) { _, _ in
            let writable = database?.probeWrite()
            let feeds = try followers.map { try $0.readiness() }.sorted { $0.feed < $1.feed }
            return ReadyReply(service: service, ready: writable?.writable != false && feeds.allSatisfy(\.ready),
                              database: writable, feeds: feeds)
        }
        for route in router.allRoutes {
            if case .pool(let pool) = route.lane {
                precondition(configuration.pools[pool] != nil, "\(route.name) runs on pool \(pool), which is not configured")
            }
        }
        let pools = configuration.pools.mapValues { FairQueue<Job>(capacity: $0.queueCapacity) }
        self.configuration = configuration
        self.logger = logger
        self.pipeline = RequestPipeline(service: service, router: router, verifier: verifier, callerCheck: callerCheck,
                                        security: configuration.security, database: database, logger: logger, pools: pools,
                                        rateLimiter: configuration.rateLimit.map(RateLimiter.init))
    }

    /// The ops this server answers, by name.
    public var ops: [String] { pipeline.router.allRoutes.map(\.name).sorted() }

    /// Requests waiting in a pool's queue, not yet begun.
    public func waiting(inPool name: String) -> Int { pipeline.pools[name]?.count ?? 0 }

    /// The endpoint clients connect to, with the port a `tcp://…:*` bind was given.
    public var endpoint: String {
        boundEndpoint.withLock { $0 } ?? configuration.endpoint
    }

    /// Binds the endpoint and starts the threads; throws when the bind fails.
    public func start() throws {
        let security = configuration.security
        if security == nil {
            logger.warning("\(configuration.service) runs in plaintext: anyone who can reach its port can call it (set HEREABOUTS_KEYS_DIR for CurveZMQ)")
            try ServerSecurity.requireLocal(configuration.endpoint)
        }
        var curve: (secretKey: String, allowedKeys: [String])?
        if let security {
            guard case .server(let secretKey) = security.role else {
                throw KeyRingError("\(configuration.service)'s server needs a server's CURVE key")
            }
            curve = (secretKey, security.allowedKeys)
        }
        let frontThreads = max(1, configuration.frontThreads)
        let front = try ZMTPServer(
            configuration: .init(endpoint: configuration.endpoint, threads: frontThreads, curve: curve,
                                 maxFrames: Self.requestLimits.maxFrames - 1, maxBytes: Self.requestLimits.maxBytes,
                                 maxFrameBytes: Limits.messageBytes),
            logger: logger
        ) { [self] request in
            receive(request)
        }
        try front.start()
        boundEndpoint.withLock { $0 = front.endpoint }
        var threads: [ServiceThread] = []
        for index in 0..<max(1, configuration.workers) {
            threads.append(ServiceThread(name: "\(configuration.service)-w\(index)") { [self] in
                runWorker(front, take: { workQueue.take() }) { job, send in pipeline.work(job, send: send) }
            })
        }
        for (name, pool) in configuration.pools {
            guard let queue = pipeline.pools[name] else { continue }
            for index in 0..<max(1, pool.threads) {
                threads.append(ServiceThread(name: "\(name)-\(index)") { [self] in
                    runWorker(front, take: { queue.take() }) { job, send in pipeline.execute(job, send: send) }
                })
            }
        }
        state.withLock { $0 = .running(router: front, workers: threads) }
        logger.info("\(configuration.service) listening", metadata: ["endpoint": "\(endpoint)",
                                                                    "front threads": "\(frontThreads)"])
    }

    /// Answers one request on the calling thread, as the socket path would but with
    /// no socket: the request's frames in (frame 0 first), the reply's frames out.
    /// For fuzzing and in-process checks; the server need not be started.
    public func answer(_ frames: [Data]) -> [Data] {
        let incoming = Incoming(message: frames, bodyStart: 0, receivedAt: Date(), peerKey: nil, truncated: false)
        switch pipeline.receive(incoming) {
        case .answered(let reply):
            return reply
        case .dispatched(let job):
            var reply: [Data] = []
            pipeline.work(job, usePools: false) { reply = $0 }
            return reply
        }
    }

    /// Stops taking requests, answers those already received (within the drain
    /// timeout), and closes every connection. Safe to call more than once, from any
    /// thread but the server's own.
    public func stop() {
        let running = state.withLock { state -> (ZMTPServer, [ServiceThread])? in
            guard case .running(let router, let workers) = state else { return nil }
            state = .stopped
            return (router, workers)
        }
        guard let (router, workers) = running else { return }
        // The front takes no more (what arrives now is dropped, as requests left in a
        // closing socket were); pools answer work they have not begun with
        // `unavailable`; what runs finishes.
        pipeline.isStopping.store(true, ordering: .relaxed)
        router.stopAccepting()
        let deadline = Date().addingTimeInterval(configuration.drainTimeout)
        while pending.load(ordering: .relaxed) > 0 && Date() < deadline {
            usleep(2_000)
        }
        let unanswered = pending.load(ordering: .relaxed)
        if unanswered > 0 {
            logger.warning("stopping with \(unanswered) request(s) unanswered after the drain timeout")
        }
        workQueue.close()
        for queue in pipeline.pools.values { queue.close() }
        workers.forEach { $0.join() }
        router.close()
        logger.info("\(configuration.service) stopped")
    }

    // MARK: Threads

    /// On a front thread (an event loop): a request answered here, or queued for the
    /// workers (nil). Nothing is taken once the server is stopping.
    private func receive(_ request: ZMTPServerRequest) -> [Data]? {
        guard !pipeline.isStopping.load(ordering: .relaxed) else { return nil }
        switch pipeline.receive(Self.split(request)) {
        case .answered(let reply):
            return reply
        case .dispatched(let job):
            pending.add(1, ordering: .relaxed)
            workQueue.offer(job)
            return nil
        }
    }

    /// A worker or pool thread: takes items until its queue closes, and sends their
    /// replies.
    private func runWorker(_ router: ZMTPServer, take: () -> Job?, process: (Job, ([Data]) -> Void) -> Void) {
        while let job = take() {
            process(job) { frames in
                router.send(frames)
                pending.subtract(1, ordering: .relaxed)
            }
        }
    }

    /// What the front thread keeps of one request: the routing id, the delimiter and
    /// the protocol's frames and bytes. The rest of a larger message is dropped unread
    /// and the request refused.
    static let requestLimits = MessageLimits(maxFrames: 2 + Limits.requestFrames, maxBytes: Limits.messageBytes + 1024)

    /// Splits a request into its routing frames and its own frames. A REQ or DEALER
    /// peer sends an empty delimiter first; a DEALER that omits it is answered without one.
    private static func split(_ request: ZMTPServerRequest) -> Incoming {
        let frames = request.frames
        let bodyStart = frames.count >= 2 && frames[1].isEmpty ? 2 : min(1, frames.count)
        // Nothing after the routing frames reads as an empty frame 0.
        let message = frames.count > bodyStart ? frames : frames + [Data()]
        return Incoming(message: message, bodyStart: bodyStart, receivedAt: Date(), peerKey: request.peerKey,
                        truncated: request.truncated)
    }
}
