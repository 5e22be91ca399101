import Contracts
import Foundation
import Logging
import ServiceClient
import ServiceKit
import ServiceKitTesting
import TestThreads
import Testing
import Wire
import ZeroMQ

@Suite("What the runtime keeps to itself", .ownThread)
struct HardeningTests {
    private func start() throws -> (TestStack, ToyService, ServiceClient) {
        let stack = try TestStack()
        let toy = try ToyService(stack: stack)
        try stack.start(toy)
        return (stack, toy, stack.client("auth"))
    }

    @Test("internal and unavailable replies say nothing of the inside: no SQL, paths or endpoints")
    func repliesSayNothing() throws {
        let (stack, _, client) = try start()
        defer { stack.stop() }
        for op in ["toy.leakInternal", "toy.leakUnavailable", "toy.crash"] {
            let reply = try #require(try stack.exchangeRaw("auth", frames: [Data(#"{"v":1,"id":"x1","op":"\#(op)"}"#.utf8)]))
            let text = String(decoding: reply[0], as: UTF8.self)
            for inside in ["SELECT", "sqlite", "/srv", "tcp://", "10.1.2.3", "hunter2", "tries"] {
                #expect(!text.contains(inside), "\(op) told \(inside): \(text)")
            }
        }
        #expect(client.failure(ToyAPI.leakInternal, Empty())?.message == "internal error")
        let unavailable = client.failure(ToyAPI.leakUnavailable, Empty())
        #expect(unavailable?.code == .unavailable && unavailable?.message == "auth did not answer" && unavailable?.detail == nil)
    }

    @Test("a message of more frames or bytes than a request may have is refused before it is read, and the server goes on")
    func boundedMessages() throws {
        let (stack, _, client) = try start()
        defer { stack.stop() }
        let frame0 = Data(#"{"v":1,"id":"many","op":"toy.count"}"#.utf8)
        let manyFrames = try #require(try stack.exchangeRaw("auth", frames: [frame0] + Array(repeating: Data([1]), count: 40)))
        #expect(ReplyEnvelope.decode(manyFrames[0]).result.failure?.code == .tooLarge)
        let chunk = Data(count: 3 * 1024 * 1024)
        let manyBytes = try #require(try stack.exchangeRaw("auth", frames: [frame0, chunk, chunk, chunk], timeout: 20))
        #expect(ReplyEnvelope.decode(manyBytes[0]).result.failure?.code == .tooLarge)
        // Within the limits the same request is simply answered.
        #expect(try client.call(ToyAPI.count, Empty()).count == 0)
        let fine = try #require(try stack.exchangeRaw("auth", frames: [frame0]))
        #expect(ReplyEnvelope.decode(fine[0]).result.failure == nil)
    }

    @Test("without CURVE keys a server binds only where no other machine reaches it", arguments: [
        ("tcp://0.0.0.0:*", false), ("tcp://*:*", false), ("tcp://192.0.2.1:7999", false), ("tcp://eth0:7999", false),
        ("tcp://127.0.0.1:*", true), ("tcp://127.0.0.2:*", true), ("tcp://[::1]:*", true),
    ])
    func plaintextStaysLocal(endpoint: String, allowed: Bool) throws {
        let stack = try TestStack()
        defer { stack.stop() }
        let toy = try ToyService(stack: stack, endpoint: endpoint)
        if allowed {
            // IPv6 may be missing on the machine; what matters is that plaintext does not refuse it.
            do { try toy.start(); toy.stop() } catch let error as ZMQError where endpoint.contains("::1") { _ = error }
        } else {
            #expect(throws: (any Error).self) { try toy.start() }
            #expect(throws: (any Error).self) {
                try EventPublisher(endpoint: endpoint, policy: SubscriptionPolicy(), logger: TestStack.logger("events"))
            }
        }
    }

    @Test("the data directory is its owner's alone (0700), and so are the file, its WAL and shm (0600)")
    func filePermissions() throws {
        let stack = try TestStack()
        defer { stack.stop() }
        let directory = stack.directory.appendingPathComponent("data")
        let path = directory.appendingPathComponent("toy.sqlite").path
        let database = try ServiceDatabase(path: path) { _ in }
        try database.pool.write { db in try db.execute(sql: "CREATE TABLE t (x)") }
        func mode(_ path: String) throws -> Int {
            try #require((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue)
        }
        #expect(try mode(directory.path) == 0o700)
        for file in [path, path + "-wal", path + "-shm"] {
            #expect(try mode(file) == 0o600, "\(file)")
        }
        // A file left readable by an earlier version is tightened when opened.
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: directory.path)
        _ = try ServiceDatabase(path: path) { _ in }
        #expect(try mode(path) == 0o600)
        #expect(try mode(directory.path) == 0o700)
    }

    @Test("ready answers whether the file takes writes and each feed is followed")
    func readiness() throws {
        let (stack, _, client) = try start()
        defer { stack.stop() }
        let ready = try client.call(HealthAPI.ready("toy"), Empty())
        #expect(ready.ready && ready.database == DatabaseReadiness(writable: true) && ready.feeds.isEmpty)
    }
}

extension Result {
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
