import Contracts
import Foundation
import Logging
import ServiceKit
import Synchronization
import Wire

/// The auth service: accounts, sessions, tokens, avatars and the `auth.changes` feed,
/// in `<data dir>/auth.sqlite`.
public final class AuthService: AssembledService {
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
        /// scrypt's cost for new password hashes, as log2 N (`HEREABOUTS_AUTH_PASSWORD_COST`):
        /// 17 (128 MiB and about a third of a second a hash) unless set. A hash keeps
        /// the cost it was made with until its account's next successful login makes it again.
        public var passwordCost: Int {
            get { scrypt.logN }
            set { scrypt.logN = newValue }
        }
        /// Costs `passwordCost` may be set to: 10 (1 MiB, ~3 ms; for tests) to 20 (1 GiB).
        public static let passwordCosts = 10...20
        /// The cost `passwordCost` has unless set: OWASP's recommendation for scrypt.
        public static let standardPasswordCost = ScryptParameters.standard.logN
        var loginPolicy: LoginPolicy
        /// How long a message the relay refused for now waits for its second try.
        var mailRetryDelay: TimeInterval = 30

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
            options.passwordCost = passwordCosts.lowerBound
            return options
        }
    }

    public let assembly: ServiceAssembly
    let store: AuthStore
    let mailSender: MailSender

    public var settings: ServiceSettings { assembly.settings }

    public init(settings: ServiceSettings, options: Options = Options(), logger: Logger) throws {
        // A lost commit here is a lost account or a resurrected session: sync fully.
        let base = try ServiceBase(settings: settings, logger: logger, durability: .full, followsUsers: false) {
            AuthSchema.register(in: &$0)
        }
        let store = AuthStore(database: base.database)
        let key = try store.signingKey()
        let issuer = try TokenIssuer(kid: key.kid, privateKey: key.privateKey)
        let hasher = PasswordHasher(parameters: options.scrypt)
        let profiles = ProfileCache()
        profiles.observe(base.database.pool)
        let mail = try AccountMailSettings(environment: settings.environment, dataDirectory: settings.dataDirectory)
        let sender = MailSender(store: store, settings: mail, retryDelay: options.mailRetryDelay, logger: logger)
        let handlers = AuthHandlers(store: store, hasher: hasher, issuer: issuer, policy: options.loginPolicy,
                                    profiles: profiles, decoyHash: hasher.decoy(),
                                    accountsPerAddress: options.accountsPerAddressPerHour.map {
                                        RateLimiter.Policy(perSecond: Double($0) / 3_600, burst: Double(max(1, $0 / 5)))
                                    }, mail: mail)
        var router = Router(service: AuthAPI.service)
        handlers.register(into: &router)

        self.store = store
        self.mailSender = sender
        let policy = options.loginPolicy
        assembly = try ServiceAssembly(
            base, service: AuthAPI.service, router: router, publishing: .changes(store.outbox),
            pools: [AuthHandlers.hashingPool: .init(threads: options.hashWorkers, queueCapacity: options.hashQueueCapacity)],
            rateLimited: false, verifier: try TokenVerifier(source: .fixed([issuer.publicKey])),
            callerCheck: CallerCheck(readsDatabase: true) { caller in
                guard try store.isSessionActive(caller.sessionID, userID: caller.userID) else {
                    throw ServiceError.unauthenticated("the session has ended; log in again")
                }
            },
            housekeeping: [.init(name: "forget-sessions", every: 600) {
                try store.purge(now: Date(), loginWindow: policy.window, knownFor: policy.knownFor)
                try store.purgeMail(now: Date())
            }],
            healthDetails: { $0.mail = sender.queueStatus })
    }

    /// Serves, then sends mail.
    public func start() throws {
        try assembly.start()
        mailSender.start()
    }

    /// Stops sending (a delivery under way finishes first), then serving.
    public func stop() {
        mailSender.stop()
        assembly.stop()
    }

    /// Password requests waiting for a hashing thread.
    var hashingWaiting: Int { assembly.waiting(inPool: AuthHandlers.hashingPool) }
}
