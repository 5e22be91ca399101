import Contracts
import Foundation
import GRDB
import ServiceKit
import ServiceKitTesting
import Synchronization
import Wire

/// A small service for testing the runtime: a counter that writes add to, an op
/// that sleeps on a pool of its own, and one that fails the way buggy code does.
struct AddRequest: ValidatedBody, Equatable {
    var amount: Int
    func validate() throws { try Check.range(amount, field: "amount", in: -100...100) }
}

struct CountReply: Codable, Sendable, Equatable {
    var count: Int
}

struct WhereRequest: ValidatedBody {
    var deferFromFront: Bool
}

struct SleepRequest: ValidatedBody {
    var milliseconds: Int
}

struct ToyChange: FeedChange, Equatable {
    var seq: Int64
    var type: String
    var key: String
    var value: Int

    var entity: String { key }
    static func deletion(of entity: String, seq: Int64) -> ToyChange { ToyChange(seq: seq, type: "deleted", key: entity, value: 0) }
}

enum ToyAPI {
    static let add = Op<AddRequest, CountReply>("toy.add", access: .anyone, effect: .write)
    static let count = Op<Empty, CountReply>("toy.count", access: .anyone, effect: .read)
    static let sleep = Op<SleepRequest, Empty>("toy.sleep", access: .anyone, effect: .read)
    static let sleepOnPool = Op<SleepRequest, Empty>("toy.sleepOnPool", access: .anyone, effect: .read)
    static let crash = Op<Empty, Empty>("toy.crash", access: .anyone, effect: .read)
    static let whoami = Op<Empty, CountReply>("toy.whoami", access: .registered, effect: .read)
    /// Answers 1 on the front thread, 2 where it may wait (it defers from the front when asked to).
    static let whereAmI = Op<WhereRequest, CountReply>("toy.whereAmI", access: .anyone, effect: .read)
    /// Keeps a front thread busy for the time asked; answers how many front-lane
    /// spins were running at its start, itself included.
    static let spin = Op<SleepRequest, CountReply>("toy.spin", access: .anyone, effect: .read)
    static let changes = Op<ChangesRequest, ChangesReply<ToyChange>>("toy.changes", access: .anyone, effect: .read)
    /// Fails as code does when a store or a call to another service fails: with the
    /// inside (a path, SQL, an endpoint) in the error.
    static let leakInternal = Op<Empty, Empty>("toy.leakInternal", access: .anyone, effect: .read)
    static let leakUnavailable = Op<Empty, Empty>("toy.leakUnavailable", access: .anyone, effect: .read)
}

private struct SecretBug: Error {
    let detail = "password=hunter2 in /srv/secret.sqlite"
}

final class ToyService: RunnableService {
    let server: Server
    let database: ServiceDatabase
    let outbox = ChangeOutbox(service: "toy")
    /// How many times `toy.add` actually ran its change.
    let applied = Counter()
    /// Front-lane spins running now.
    let spinning = Counter()

    init(stack: TestStack, verifier: TokenVerifier? = nil, poolCapacity: Int = 16, endpoint: String? = nil,
         frontThreads: Int = 1) throws {
        let database = try ServiceDatabase(path: stack.directory.appendingPathComponent("toy.sqlite").path) { migrator in
            migrator.registerMigration("toy-1") { db in
                try db.execute(sql: "CREATE TABLE counter (id INTEGER PRIMARY KEY, value INTEGER NOT NULL); INSERT INTO counter VALUES (1, 0)")
            }
        }
        self.database = database
        var router = Router(service: "toy")
        let outbox = self.outbox
        let applied = self.applied
        let spinning = self.spinning
        router.write(ToyAPI.add) { request, context in
            // Slow enough for a retry to arrive while it runs.
            Thread.sleep(forTimeInterval: 0.05)
            return try context.commit { db in
                try db.execute(sql: "UPDATE counter SET value = value + ? WHERE id = 1", arguments: [request.amount])
                let value = try Int.fetchOne(db, sql: "SELECT value FROM counter WHERE id = 1") ?? 0
                try outbox.record(ToyChange(seq: 0, type: "counter.set", key: "counter", value: value), entity: "counter", in: db)
                applied.increment()
                return CountReply(count: value)
            }
        }
        router.read(ToyAPI.count) { _, _ in
            CountReply(count: try database.pool.read { db in try Int.fetchOne(db, sql: "SELECT value FROM counter") ?? 0 })
        }
        router.read(ToyAPI.sleep) { request, _ in
            Thread.sleep(forTimeInterval: Double(request.milliseconds) / 1000)
            return Empty()
        }
        router.read(ToyAPI.sleepOnPool, lane: .pool("slow")) { request, _ in
            Thread.sleep(forTimeInterval: Double(request.milliseconds) / 1000)
            return Empty()
        }
        router.read(ToyAPI.crash) { _, _ in throw SecretBug() }
        router.read(ToyAPI.leakInternal) { _, _ in
            throw ServiceError(code: .internal, message: "no such table: secret in SELECT * FROM secret (/srv/toy.sqlite)")
        }
        router.read(ToyAPI.leakUnavailable) { _, _ in
            throw ServiceError.unavailable("auth did not answer", detail: "at tcp://10.1.2.3:7101 (3 tries of 2.5 s)")
        }
        router.read(ToyAPI.whoami, lane: .front) { _, context in CountReply(count: try context.requireCaller().userID.count) }
        router.read(ToyAPI.whereAmI, lane: .front) { request, context in
            if request.deferFromFront && !context.mayWait { throw RequestContext.Deferred() }
            return CountReply(count: context.mayWait ? 2 : 1)
        }
        router.read(ToyAPI.spin, lane: .front) { request, _ in
            let running = spinning.increment()
            defer { spinning.decrement() }
            let end = Date().addingTimeInterval(Double(request.milliseconds) / 1000)
            while Date() < end {}
            return CountReply(count: running)
        }
        router.changes(ToyAPI.changes, outbox: outbox, database: database)
        server = Server(configuration: .init(service: "toy", endpoint: endpoint ?? stack.endpoint("auth"),
                                             frontThreads: frontThreads, workers: 2,
                                             pools: ["slow": .init(threads: 1, queueCapacity: poolCapacity)]),
                        router: router, database: database, verifier: verifier, logger: TestStack.logger("toy"))
    }

    func answer(_ frames: [Data]) -> [Data] { server.answer(frames) }
    var ops: [String] { server.ops }

    func start() throws { try server.start() }
    func stop() { server.stop() }
}

final class Counter: Sendable {
    private let value = Atomic<Int>(0)
    /// Adds one; returns the new value.
    @discardableResult
    func increment() -> Int { value.add(1, ordering: .relaxed).newValue }
    func decrement() { value.subtract(1, ordering: .relaxed) }
    func load(ordering _: AtomicLoadOrdering = .relaxed) -> Int { value.load(ordering: .relaxed) }
}
