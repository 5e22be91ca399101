import Contracts
import Foundation
import Logging
import ServiceKit
import Synchronization
import Wire

/// The auth service: accounts, sessions, tokens, avatars and the `auth.changes` feed,
/// in `<data dir>/auth.sqlite`.
public final class AuthService: RunnableService {
    public struct Options: Sendable {
        /// Threads that hash passwords; logins beyond them wait in a queue.
        public var hashWorkers: Int
        /// Password requests waiting beyond this are refused with `rate_limited`.
        public var hashQueueCapacity: Int
        /// New accounts one client address may make in an hour, registrations and
        /// upgrades together and anonymous ones apart (bursts of a fifth of it); nil
        /// for no limit (`HEREABOUTS_AUTH_ACCOUNTS_PER_ADDRESS`, `0` for none).
        public var accountsPerAddressPerHour: Int?
        var scrypt: ScryptParameters
        var loginPolicy: LoginPolicy

        /// One hashing thread per two cores: hashing never takes every core, so
        /// `health` and token checks stay fast under a login storm.
        public init(hashWorkers: Int = max(1, ProcessInfo.processInfo.activeProcessorCount / 2),
                    hashQueueCapacity: Int = 64) {
            self.hashWorkers = hashWorkers
            self.hashQueueCapacity = hashQueueCapacity
            self.accountsPerAddressPerHour = 100
            self.scrypt = .standard
            self.loginPolicy = LoginPolicy()
        }

        /// One hashing thread and a password hash ~100 times cheaper than the real
        /// one: for tests of other services, which register users by the dozen.
        /// Never for real accounts.
        public static var cheapHashingForTests: Options {
            var options = Options(hashWorkers: 1)
            options.scrypt = ScryptParameters(logN: 10, r: 8, p: 1)
            return options
        }
    }

    public let settings: ServiceSettings
    let store: AuthStore
    private let server: Server
    private let housekeeper: Housekeeper
    private let logger: Logger
    private let publisher = Mutex<EventPublisher?>(nil)

    public init(settings: ServiceSettings, options: Options = Options(), logger: Logger) throws {
        self.settings = settings
        self.logger = logger
        // A lost commit here is a lost account or a resurrected session: sync fully.
        let database = try ServiceDatabase(path: settings.databasePath, durability: .full, maxBytes: settings.databaseMaxBytes) { migrator in
            AuthSchema.register(in: &migrator)
        }
        let store = AuthStore(database: database)
        let key = try store.signingKey()
        let issuer = try TokenIssuer(kid: key.kid, privateKey: key.privateKey)
        let hasher = PasswordHasher(parameters: options.scrypt)
        let profiles = ProfileCache()
        profiles.observe(database.pool)
        let handlers = AuthHandlers(store: store, hasher: hasher, issuer: issuer, policy: options.loginPolicy,
                                    profiles: profiles, decoyHash: hasher.decoy(),
                                    accountsPerAddress: options.accountsPerAddressPerHour.map {
                                        RateLimiter.Policy(perSecond: Double($0) / 3_600, burst: Double(max(1, $0 / 5)))
                                    })
        var router = Router(service: AuthAPI.service)
        handlers.register(into: &router)

        self.store = store
        let policy = options.loginPolicy
        self.housekeeper = Housekeeper(tasks: [
            .forgetKeptReplies(in: database),
            .checkpoint(database),
            .init(name: "forget-sessions", every: 600) {
                try store.purge(now: Date(), loginWindow: policy.window, knownFor: policy.knownFor)
            },
        ], logger: logger)
        self.server = Server(
            configuration: .init(service: AuthAPI.service, endpoint: settings.endpoint, workers: settings.workers,
                                 pools: [AuthHandlers.hashingPool: .init(threads: options.hashWorkers,
                                                                         queueCapacity: options.hashQueueCapacity)],
                                 security: ServerSecurity(settings)),
            router: router, database: database, verifier: try TokenVerifier(source: .fixed([issuer.publicKey])),
            callerCheck: CallerCheck(readsDatabase: true) { caller in
                guard try store.isSessionActive(caller.sessionID, userID: caller.userID) else {
                    throw ServiceError.unauthenticated("the session has ended; log in again")
                }
            },
            logger: logger)
    }

    /// Where clients connect (with the port a `:*` endpoint was given).
    public var endpoint: String { server.endpoint }

    public func answer(_ frames: [Data]) -> [Data] { server.answer(frames) }

    public var ops: [String] { server.ops }

    /// Password requests waiting for a hashing thread.
    var hashingWaiting: Int { server.waiting(inPool: AuthHandlers.hashingPool) }

    public func start() throws {
        if let events = settings.eventsEndpoint {
            let publisher = try EventPublisher(endpoint: events, security: ServerSecurity(settings),
                                               policy: .changeNotices(of: AuthAPI.service), logger: logger)
            store.outbox.announceCommits(of: store.database, on: publisher)
            self.publisher.withLock { $0 = publisher }
        }
        try server.start()
        housekeeper.start()
    }

    public func stop() {
        server.stop()
        housekeeper.stop()
        publisher.withLock { $0?.close() }
    }
}
