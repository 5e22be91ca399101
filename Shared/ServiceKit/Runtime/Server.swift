import Contracts
import Foundation
import Logging
import Synchronization
import Wire
import ZeroMQ

/// A service's request server: the ZeroMQ multithreaded-server shape.
///
/// One front thread owns the ROUTER socket clients connect to. It hands each request
/// to a queue that idle worker threads take from, and forwards the replies workers
/// push back to it. Ops marked for a named pool (password hashing) run on that
/// pool's own threads, so slow work never occupies the workers that answer
/// `health`.
public final class Server: Sendable {
    public struct Configuration: Sendable {
        public var service: String
        /// Where clients connect: `tcp://127.0.0.1:7101`, `ipc:///…`, or `tcp://127.0.0.1:*`
        /// for a free port (read the bound one from `endpoint`).
        public var endpoint: String
        public var workers: Int
        /// Extra pools by name, for routes that name them.
        public var pools: [String: PoolConfiguration]
        /// How long `stop` waits for requests already received to be answered.
        public var drainTimeout: TimeInterval
        /// How long a closing socket keeps trying to deliver queued replies.
        public var lingerMilliseconds: Int32
        public var context: Context

        public init(service: String, endpoint: String, workers: Int = 2, pools: [String: PoolConfiguration] = [:],
                    drainTimeout: TimeInterval = 0.7, lingerMilliseconds: Int32 = 150, context: Context = .shared) {
            self.service = service
            self.endpoint = endpoint
            self.workers = workers
            self.pools = pools
            self.drainTimeout = drainTimeout
            self.lingerMilliseconds = lingerMilliseconds
            self.context = context
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
    private let mainQueue = WorkQueue<Incoming>()
    private let internalEndpoint: String
    private let logger: Logger
    private let state = Mutex<RunState>(.idle)
    private let boundEndpoint = Mutex<String?>(nil)

    private enum RunState {
        case idle
        case running(front: ServiceThread, workers: [ServiceThread])
        case stopped
    }

    /// - Parameters:
    ///   - verifier: checks tokens; nil refuses every request that carries one.
    ///   - authorize: a further check of a verified caller (a revoked session, a
    ///     deleted user), throwing `unauthenticated`.
    public init(configuration: Configuration, router: Router, database: ServiceDatabase?,
                verifier: TokenVerifier?, authorize: (@Sendable (Caller) throws -> Void)? = nil,
                logger: Logger) {
        var router = router
        let startedAt = Date()
        let service = configuration.service
        router.read(HealthAPI.health(service)) { _, _ in
            HealthReply(service: service, version: HereaboutsVersion.current,
                        uptimeSeconds: (Date().timeIntervalSince(startedAt) * 10).rounded() / 10)
        }
        for route in router.allRoutes {
            if let pool = route.pool {
                precondition(configuration.pools[pool] != nil, "\(route.name) runs on pool \(pool), which is not configured")
            }
        }
        let pools = configuration.pools.mapValues { WorkQueue<Job>(capacity: $0.queueCapacity) }
        self.configuration = configuration
        self.logger = logger
        self.internalEndpoint = "inproc://\(service)-replies-\(UUID().uuidString)"
        self.pipeline = RequestPipeline(service: service, router: router, verifier: verifier, authorize: authorize,
                                        database: database, logger: logger, pools: pools)
    }

    /// The endpoint clients connect to, with the port a `tcp://…:*` bind was given.
    public var endpoint: String {
        boundEndpoint.withLock { $0 } ?? configuration.endpoint
    }

    /// Binds the endpoint and starts the threads; throws when the bind fails.
    public func start() throws {
        let started = Mutex<Result<String, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let front = ServiceThread(name: "\(configuration.service)-front") { [self] in
            runFront(reportBind: { result in
                started.withLock { $0 = result }
                ready.signal()
            })
        }
        ready.wait()
        switch started.withLock({ $0! }) {
        case .failure(let error):
            front.join()
            throw error
        case .success(let endpoint):
            boundEndpoint.withLock { $0 = endpoint }
        }
        var workers: [ServiceThread] = []
        for index in 0..<max(1, configuration.workers) {
            workers.append(ServiceThread(name: "\(configuration.service)-w\(index)") { [self] in
                runWorker(take: { mainQueue.take() }) { incoming, send in pipeline.handle(incoming, send: send) }
            })
        }
        for (name, pool) in configuration.pools {
            guard let queue = pipeline.pools[name] else { continue }
            for index in 0..<max(1, pool.threads) {
                workers.append(ServiceThread(name: "\(name)-\(index)") { [self] in
                    runWorker(take: { queue.take() }) { job, send in pipeline.execute(job, send: send) }
                })
            }
        }
        state.withLock { $0 = .running(front: front, workers: workers) }
        logger.info("\(configuration.service) listening", metadata: ["endpoint": "\(endpoint)"])
    }

    /// Stops taking requests, answers those already received (within the drain
    /// timeout), and closes every socket. Safe to call more than once.
    public func stop() {
        let running = state.withLock { state -> (ServiceThread, [ServiceThread])? in
            guard case .running(let front, let workers) = state else { return nil }
            state = .stopped
            return (front, workers)
        }
        guard let (front, workers) = running else { return }
        pipeline.isStopping.store(true, ordering: .relaxed)
        if let control = try? configuration.context.makeSocket(.push) {
            try? control.set(.linger(milliseconds: 0))
            try? control.connect(internalEndpoint)
            _ = try? control.send([Data("stop".utf8)])
            front.join()
            control.close()
        }
        mainQueue.close()
        for queue in pipeline.pools.values { queue.close() }
        for worker in workers { worker.join() }
        logger.info("\(configuration.service) stopped")
    }

    // MARK: Threads

    /// The front thread: ROUTER in, work queue out; worker replies in, ROUTER out.
    private func runFront(reportBind: (Result<String, any Error>) -> Void) {
        let context = configuration.context
        let frontend: Socket
        let replies: Socket
        do {
            frontend = try context.makeSocket(.router)
            try frontend.set(.linger(milliseconds: configuration.lingerMilliseconds))
            try frontend.set(.maxMessageSize(bytes: Int64(Limits.messageBytes)))
            try frontend.set(.receiveHighWaterMark(messages: 10_000))
            try frontend.set(.sendHighWaterMark(messages: 10_000))
            // Drop peers that stop answering heartbeats instead of queueing for them.
            try frontend.set(.heartbeatInterval(milliseconds: 5_000))
            try frontend.set(.heartbeatTimeout(milliseconds: 15_000))
            try frontend.bind(configuration.endpoint)
            replies = try context.makeSocket(.pull)
            try replies.set(.linger(milliseconds: 0))
            try replies.set(.receiveHighWaterMark(messages: 0))
            try replies.bind(internalEndpoint)
        } catch {
            reportBind(.failure(error))
            return
        }
        reportBind(.success(frontend.lastEndpoint))

        var poller = Poller()
        let frontIndex = poller.addReadable(frontend)
        let repliesIndex = poller.addReadable(replies)
        var pending = 0
        var drainDeadline: Date?
        while true {
            if let deadline = drainDeadline {
                if pending <= 0 || Date() >= deadline { break }
            }
            do {
                try poller.poll(timeout: drainDeadline == nil ? 1000 : 10)
                // Replies first: they finish work and free clients.
                if poller.isReadable(repliesIndex) {
                    while let frames = try replies.receiveMessage(wait: false) {
                        if frames.count == 1 && frames[0] == Data("stop".utf8) {
                            drainDeadline = drainDeadline ?? Date().addingTimeInterval(configuration.drainTimeout)
                            continue
                        }
                        try frontend.send(frames, wait: false)
                        pending -= 1
                    }
                }
                if drainDeadline == nil, poller.isReadable(frontIndex) {
                    var batch = 0
                    while batch < 256, let frames = try frontend.receiveMessage(wait: false) {
                        batch += 1
                        guard let incoming = Self.split(frames) else { continue }
                        pending += 1
                        mainQueue.offer(incoming)
                    }
                }
            } catch {
                logger.error("front loop error", metadata: ["error": "\(error)"])
                if error.isContextTerminated { break }
            }
        }
        if pending > 0 {
            logger.warning("stopping with \(pending) request(s) unanswered after the drain timeout")
        }
        frontend.close()
        replies.close()
    }

    /// Splits a ROUTER message into routing frames and the request's frames. A REQ
    /// or DEALER peer sends an empty delimiter after its routing id; a DEALER that
    /// omits it is answered without one.
    private static func split(_ frames: [Data]) -> Incoming? {
        guard frames.count >= 2 else { return nil }
        let routing: [Data]
        let body: [Data]
        if frames[1].isEmpty {
            routing = Array(frames[0...1])
            body = Array(frames[2...])
        } else {
            routing = [frames[0]]
            body = Array(frames[1...])
        }
        return Incoming(routing: routing, frames: body.isEmpty ? [Data()] : body, receivedAt: Date())
    }

    /// A worker: takes items until its queue closes; replies go to the front.
    private func runWorker<Item>(take: () -> Item?, process: (Item, ([Data]) -> Void) -> Void) {
        let socket: Socket
        do {
            socket = try configuration.context.makeSocket(.push)
            try socket.set(.linger(milliseconds: configuration.lingerMilliseconds))
            try socket.set(.sendHighWaterMark(messages: 0))
            try socket.connect(internalEndpoint)
        } catch {
            logger.critical("a worker could not connect to the front thread", metadata: ["error": "\(error)"])
            return
        }
        defer { socket.close() }
        while let item = take() {
            process(item) { frames in
                do {
                    try socket.send(frames)
                } catch {
                    logger.error("a worker could not pass a reply on", metadata: ["error": "\(error)"])
                }
            }
        }
    }
}
