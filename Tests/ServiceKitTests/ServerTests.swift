import Contracts
import Foundation
import GRDB
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Synchronization
import TestThreads
import Testing
import Wire

@Suite("The request server", .ownThread)
struct ServerTests {
    private func start(poolCapacity: Int = 16) throws -> (TestStack, ToyService, ServiceClient) {
        let stack = try TestStack()
        let toy = try ToyService(stack: stack, poolCapacity: poolCapacity)
        try stack.start(toy)
        return (stack, toy, stack.client("auth"))
    }

    @Test("every service answers health with its name, version and uptime")
    func health() throws {
        let (stack, _, client) = try start()
        defer { stack.stop() }
        let health = try client.call(HealthAPI.health("toy"), Empty())
        #expect(health.service == "toy")
        #expect(health.status == "ok")
        #expect(health.version == HereaboutsVersion.current)
        #expect(health.uptimeSeconds >= 0)
    }

    @Test("a write retried with the same id is applied once and answered the same")
    func idempotentWrite() throws {
        let (stack, toy, client) = try start()
        defer { stack.stop() }
        let first = try client.call(ToyAPI.add, AddRequest(amount: 5), id: "add-5")
        let again = try client.call(ToyAPI.add, AddRequest(amount: 5), id: "add-5")
        #expect(first == again)
        #expect(try client.call(ToyAPI.count, Empty()).count == 5)
        #expect(toy.applied.load(ordering: .relaxed) == 1)
        #expect(throws: ServiceError.self) { try client.call(ToyAPI.add, AddRequest(amount: 6), id: "add-5") }
    }

    @Test("a retry that arrives while the original runs is answered from it, not run again")
    func retryDuringOriginal() throws {
        let (stack, toy, _) = try start()
        defer { stack.stop() }
        let endpoint = stack.endpoint("auth")
        let counts = Mutex<[Int]>([])
        let threads = (0..<4).map { _ in
            ServiceThread(name: "retry") {
                let client = ServiceClient(service: "toy", endpoint: endpoint, timeout: 10, tries: 1)
                if let reply = try? client.call(ToyAPI.add, AddRequest(amount: 1), id: "same-id") {
                    counts.withLock { $0.append(reply.count) }
                }
                client.close()
            }
        }
        threads.forEach { $0.join() }
        #expect(counts.withLock { $0 } == [1, 1, 1, 1])
        #expect(toy.applied.load(ordering: .relaxed) == 1)
    }

    @Test("a handler's unexpected error is answered as internal, with no detail")
    func internalErrors() throws {
        let (stack, _, client) = try start()
        defer { stack.stop() }
        do {
            _ = try client.call(ToyAPI.crash, Empty())
            Issue.record("no error")
        } catch let error as ServiceError {
            #expect(error.code == .internal)
            #expect(error.message == "internal error")
        }
        #expect(try client.call(ToyAPI.count, Empty()).count == 0)
    }

    @Test("a registered-only op refuses a request without a token")
    func accessRules() throws {
        let (stack, _, client) = try start()
        defer { stack.stop() }
        #expect { try client.call(ToyAPI.whoami, Empty()) } throws: { ($0 as? ServiceError)?.code == .unauthenticated }
        // This toy has no verifier: a token cannot be checked, so it is refused.
        #expect { try client.call(ToyAPI.count, Empty(), token: "x") } throws: { ($0 as? ServiceError)?.code == .unauthenticated }
    }

    @Test("a front-lane op answers on the front thread, and runs on a worker when it defers")
    func frontLane() throws {
        let (stack, _, client) = try start()
        defer { stack.stop() }
        #expect(try client.call(ToyAPI.whereAmI, WhereRequest(deferFromFront: false)).count == 1)
        #expect(try client.call(ToyAPI.whereAmI, WhereRequest(deferFromFront: true)).count == 2)
    }

    @Test("front-lane ops run side by side on the server's front threads; one front thread runs them one at a time",
          arguments: [1, 3])
    func frontThreads(_ count: Int) throws {
        let stack = try TestStack()
        defer { stack.stop() }
        try stack.start(try ToyService(stack: stack, frontThreads: count))
        let endpoint = stack.endpoint("auth")
        let mostAtOnce = Atomic<Int>(0)
        let answered = Counter()
        let threads = (0..<6).map { index in
            ServiceThread(name: "spin-\(index)") {
                let client = ServiceClient(service: "toy", endpoint: endpoint, timeout: 10, tries: 1)
                defer { client.close() }
                for _ in 0..<5 {
                    guard let reply = try? client.call(ToyAPI.spin, SleepRequest(milliseconds: 20)) else { continue }
                    mostAtOnce.max(reply.count, ordering: .relaxed)
                    answered.increment()
                }
            }
        }
        threads.forEach { $0.join() }
        #expect(answered.load() == 30)
        if count == 1 {
            #expect(mostAtOnce.load(ordering: .relaxed) == 1)
        } else {
            #expect(mostAtOnce.load(ordering: .relaxed) >= 2)
        }
    }

    @Test("with several front threads, closed-loop clients mixing front-lane and worker ops get every answer, and the right one")
    func frontThreadsUnderLoad() throws {
        let stack = try TestStack()
        defer { stack.stop() }
        let toy = try ToyService(stack: stack, frontThreads: 3)
        try stack.start(toy)
        let endpoint = stack.endpoint("auth")
        let wrong = Counter(), answered = Counter()
        let threads = (0..<8).map { index in
            ServiceThread(name: "mix-\(index)") {
                let client = ServiceClient(service: "toy", endpoint: endpoint, timeout: 5, tries: 1)
                defer { client.close() }
                for round in 0..<300 {
                    let deferred = (round + index) % 3 == 0
                    guard let reply = try? client.call(ToyAPI.whereAmI, WhereRequest(deferFromFront: deferred)) else { continue }
                    answered.increment()
                    if reply.count != (deferred ? 2 : 1) { wrong.increment() }
                }
            }
        }
        threads.forEach { $0.join() }
        #expect(answered.load() == 8 * 300)
        #expect(wrong.load() == 0)
    }

    @Test("a token whose key must first be fetched is admitted on a worker, not refused")
    func frontLaneFetchesKeysOnWorker() throws {
        let stack = try TestStack()
        defer { stack.stop() }
        let key = Curve25519Key()
        let fetches = Counter()
        let verifier = try TokenVerifier(source: .fetched {
            fetches.increment()
            return [key.jwk]
        })
        try stack.start(try ToyService(stack: stack, verifier: verifier))
        let client = stack.client("auth")
        let token = try key.token(userID: "user-7", expires: Date().addingTimeInterval(600))
        #expect(try client.call(ToyAPI.whoami, Empty(), token: token).count == 6)
        #expect(try client.call(ToyAPI.whoami, Empty(), token: token).count == 6)
        #expect(fetches.load() == 1)
    }

    @Test("a slow request does not hold up others while a worker is free")
    func slowRequestDoesNotBlock() throws {
        let (stack, _, client) = try start()
        defer { stack.stop() }
        let endpoint = stack.endpoint("auth")
        let slowDone = Atomic<Bool>(false)
        let slow = ServiceThread(name: "slow") {
            let client = ServiceClient(service: "toy", endpoint: endpoint, timeout: 10, tries: 1)
            _ = try? client.call(ToyAPI.sleep, SleepRequest(milliseconds: 1500))
            slowDone.store(true, ordering: .relaxed)
            client.close()
        }
        Thread.sleep(forTimeInterval: 0.1)
        for _ in 0..<10 { _ = try client.call(ToyAPI.count, Empty()) }
        #expect(slowDone.load(ordering: .relaxed) == false)
        slow.join()
    }

    @Test("stopping answers the requests already received, then refuses to listen")
    func gracefulStop() throws {
        let (stack, toy, _) = try start()
        defer { stack.stop() }
        let endpoint = stack.endpoint("auth")
        let answered = Atomic<Int>(0)
        let clients = (0..<2).map { _ in
            ServiceThread(name: "in-flight") {
                let client = ServiceClient(service: "toy", endpoint: endpoint, timeout: 5, tries: 1)
                if (try? client.call(ToyAPI.sleep, SleepRequest(milliseconds: 300))) != nil {
                    answered.add(1, ordering: .relaxed)
                }
                client.close()
            }
        }
        Thread.sleep(forTimeInterval: 0.1)
        toy.stop()
        clients.forEach { $0.join() }
        #expect(answered.load(ordering: .relaxed) == 2)
        let late = ServiceClient(service: "toy", endpoint: endpoint, timeout: 0.3, tries: 1)
        defer { late.close() }
        #expect { try late.call(ToyAPI.count, Empty()) } throws: { ($0 as? ServiceError)?.code == .unavailable }
    }

    @Test("work queued for a pool when the service stops is answered unavailable, not dropped")
    func stoppingPool() throws {
        let (stack, toy, _) = try start()
        defer { stack.stop() }
        let endpoint = stack.endpoint("auth")
        let codes = Mutex<[String]>([])
        let clients = (0..<3).map { _ in
            ServiceThread(name: "pooled") {
                let client = ServiceClient(service: "toy", endpoint: endpoint, timeout: 5, tries: 1)
                do {
                    _ = try client.call(ToyAPI.sleepOnPool, SleepRequest(milliseconds: 400))
                    codes.withLock { $0.append("ok") }
                } catch let error as ServiceError {
                    codes.withLock { $0.append(error.code.rawValue) }
                } catch {}
                client.close()
            }
        }
        Thread.sleep(forTimeInterval: 0.15)
        toy.stop()
        clients.forEach { $0.join() }
        let all = codes.withLock { $0 }.sorted()
        #expect(all == ["ok", "unavailable", "unavailable"])
    }

    @Test("a full pool queue refuses with rate_limited and a retry time")
    func fullPool() throws {
        let (stack, _, _) = try start(poolCapacity: 1)
        defer { stack.stop() }
        let endpoint = stack.endpoint("auth")
        let errors = Mutex<[ServiceError]>([])
        let clients = (0..<4).map { _ in
            ServiceThread(name: "pooled") {
                let client = ServiceClient(service: "toy", endpoint: endpoint, timeout: 5, tries: 1)
                do { _ = try client.call(ToyAPI.sleepOnPool, SleepRequest(milliseconds: 300)) } catch let error as ServiceError {
                    errors.withLock { $0.append(error) }
                } catch {}
                client.close()
            }
        }
        clients.forEach { $0.join() }
        let refused = errors.withLock { $0 }
        #expect(!refused.isEmpty)
        #expect(refused.allSatisfy { $0.code == .rateLimited && ($0.retryAfterMs ?? 0) > 0 })
    }

    @Test("a server cannot bind a TCP port in use, and says why")
    func bindFailure() throws {
        let first = Server(configuration: .init(service: "toy", endpoint: "tcp://127.0.0.1:*"), router: Router(service: "toy"),
                           database: nil, verifier: nil, logger: TestStack.logger("toy"))
        try first.start()
        defer { first.stop() }
        let second = Server(configuration: .init(service: "toy", endpoint: first.endpoint), router: Router(service: "toy"),
                            database: nil, verifier: nil, logger: TestStack.logger("toy"))
        #expect { try second.start() } throws: { "\($0)".contains("Address already in use") }
    }
}

@Suite("The change outbox", .ownThread)
struct OutboxTests {
    @Test("recording an entity again replaces its earlier change with a newer seq")
    func compaction() throws {
        let stack = try TestStack()
        defer { stack.stop() }
        let toy = try ToyService(stack: stack)
        try stack.start(toy)
        let client = stack.client("auth")
        for amount in 1...5 { _ = try client.call(ToyAPI.add, AddRequest(amount: amount)) }
        let feed = try client.call(ToyAPI.changes, ChangesRequest())
        #expect(feed.changes == [ToyChange(seq: 5, type: "counter.set", key: "counter", value: 15)])
        #expect(feed.lastSeq == 5)
        let rows = try toy.database.pool.read { db in try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM change") }
        #expect(rows == 1)
    }

    @Test("a feed page stops early to stay under 1 MiB")
    func pageSize() throws {
        let stack = try TestStack()
        defer { stack.stop() }
        let toy = try ToyService(stack: stack)
        let outbox = toy.outbox
        let padding = String(repeating: "x", count: 100_000)
        try toy.database.pool.write { db in
            for index in 0..<30 {
                try outbox.record(ToyChange(seq: 0, type: padding, key: "k\(index)", value: index), entity: "k\(index)", in: db)
            }
        }
        let reply = try toy.database.pool.read { db in try outbox.changesReply(after: 0, limit: 1000, in: db) }
        #expect(reply.bytes.count < Limits.replyPageBytes)
        let decoded = try JSONValueDecoder().decode(ChangesReply<ToyChange>.self, from: Data(reply.bytes))
        #expect(decoded.changes.count < 30 && decoded.changes.count >= 9)
        #expect(decoded.lastSeq == decoded.changes.last?.seq)
    }
}
