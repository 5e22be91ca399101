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

@Suite("Following auth.changes", .ownThread)
struct FollowerTests {
    /// A follower's own database that counts how often each change is applied.
    private func followerDatabase(_ auth: AuthFixture) throws -> ServiceDatabase {
        try ServiceDatabase(path: auth.stack.directory.appendingPathComponent("follower.sqlite").path) { migrator in
            migrator.registerMigration("applied") { db in
                try db.execute(sql: "CREATE TABLE applied (user_id TEXT PRIMARY KEY, times INTEGER NOT NULL, name TEXT)")
            }
        }
    }

    private func follower(_ auth: AuthFixture, _ database: ServiceDatabase, batchSize: Int,
                          pollInterval: TimeInterval = 1) -> ChangeFollower<UserChange> {
        let feed = ChangeFollower<UserChange>.Feed(name: "auth", requestEndpoint: auth.stack.endpoint("auth"),
                                                   eventsEndpoint: auth.stack.eventsEndpoint("auth"),
                                                   op: AuthAPI.changes, batchSize: batchSize, pollInterval: pollInterval)
        return ChangeFollower(feed: feed, database: database, logger: TestStack.logger("follower"),
                              held: { db in try String.fetchAll(db, sql: "SELECT user_id FROM applied") }) { changes, db in
            for change in changes {
                try db.execute(sql: """
                    INSERT INTO applied (user_id, times, name) VALUES (?, 1, ?)
                    ON CONFLICT(user_id) DO UPDATE SET times = times + 1, name = excluded.name
                    """, arguments: [change.userId, change.user?.profile.displayName])
            }
        }
    }

    @Test("each change is applied exactly once across a restart of the follower between batches")
    func exactlyOnceAcrossRestart() throws {
        let auth = try AuthFixture()
        for index in 0..<25 { try auth.register(displayName: "User \(index)") }
        let database = try followerDatabase(auth)
        let client = auth.stack.client("auth")

        let first = follower(auth, database, batchSize: 10)
        #expect(try first.catchUp(using: client, maxBatches: 2) == 20)
        // The follower is gone; a new one starts from the cursor in its own file.
        let second = follower(auth, database, batchSize: 10)
        #expect(try second.cursor() == 20)
        #expect(try second.catchUp(using: client) == 5)

        let times = try database.pool.read { db in try Int.fetchAll(db, sql: "SELECT times FROM applied") }
        #expect(times.count == 25)
        #expect(times.allSatisfy { $0 == 1 })
    }

    @Test("a batch that fails to apply ends the catch-up there: no batch after it is applied, the cursor stays before it, and the next catch-up starts from it")
    func failedBatchStops() throws {
        struct Refused: Error {}
        let auth = try AuthFixture()
        for index in 0..<25 { try auth.register(displayName: "User \(index)") }
        let database = try followerDatabase(auth)
        let refusing = Mutex(true)
        let feed = ChangeFollower<UserChange>.Feed(name: "auth", requestEndpoint: auth.stack.endpoint("auth"),
                                                   eventsEndpoint: auth.stack.eventsEndpoint("auth"),
                                                   op: AuthAPI.changes, batchSize: 5, pollInterval: 60)
        let batches = Mutex(0)
        let follower = ChangeFollower(feed: feed, database: database, logger: TestStack.logger("follower"),
                                      held: { _ in [] }) { changes, db in
            // The second batch is refused while `refusing` holds.
            let number = batches.withLock { $0 += 1; return $0 }
            if number == 2, refusing.withLock({ $0 }) { throw Refused() }
            for change in changes {
                try db.execute(sql: """
                    INSERT INTO applied (user_id, times, name) VALUES (?, 1, ?)
                    ON CONFLICT(user_id) DO UPDATE SET times = times + 1, name = excluded.name
                    """, arguments: [change.userId, change.user?.profile.displayName])
            }
        }
        let client = auth.stack.client("auth")
        #expect(throws: Refused.self) { try follower.catchUp(using: client) }
        #expect(try follower.cursor() == 5, "the first batch only")
        #expect(try database.pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM applied") } == 5)
        refusing.withLock { $0 = false }
        #expect(try follower.catchUp(using: client) == 20)
        let times = try database.pool.read { db in try Int.fetchAll(db, sql: "SELECT times FROM applied") }
        #expect(times.count == 25 && times.allSatisfy { $0 == 1 }, "\(times)")
    }

    @Test("the cursor a follower gives moves once a batch's after-commit work is done, not at the commit a moment before")
    func cursorAfterTheCommitsWork() throws {
        let auth = try AuthFixture()
        for index in 0..<3 { try auth.register(displayName: "User \(index)") }
        let database = try followerDatabase(auth)
        // The batch's in-memory work (as geo's indexes), held until the test lets it go.
        let held = DispatchSemaphore(value: 0), entered = DispatchSemaphore(value: 0)
        let feed = ChangeFollower<UserChange>.Feed(name: "auth", requestEndpoint: auth.stack.endpoint("auth"),
                                                   eventsEndpoint: auth.stack.eventsEndpoint("auth"),
                                                   op: AuthAPI.changes, batchSize: 100, pollInterval: 60)
        let follower = ChangeFollower(feed: feed, database: database, logger: TestStack.logger("follower"),
                                      held: { _ in [] }) { _, db in
            db.afterNextTransaction { _ in
                entered.signal()
                held.wait()
            }
        }
        let endpoint = auth.stack.endpoint("auth")
        let catching = ServiceThread(name: "catch-up") {
            let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 10, tries: 1)
            defer { client.close() }
            _ = try? follower.catchUp(using: client)
        }
        #expect(entered.wait(timeout: .now() + 10) == .success, "the batch was committed")
        let inFile = try database.pool.read { db in try Int64.fetchOne(db, sql: "SELECT seq FROM feed_cursor WHERE feed = 'auth'") }
        #expect(inFile == 3, "committed: the file's cursor shows the batch")
        #expect(try follower.cursor() == 0, "its after-commit work is not done: the follower does not say so yet")
        held.signal()
        catching.join()
        #expect(try follower.cursor() == 3)
    }

    @Test("a running follower picks up new changes promptly after a notice, without waiting for its poll")
    func followsLive() throws {
        let auth = try AuthFixture()
        let database = try followerDatabase(auth)
        // It polls once a minute: only auth.changed/ can wake it within the test.
        let live = follower(auth, database, batchSize: 100, pollInterval: 60)
        live.start()
        defer { live.stop() }
        // The first poll runs at once; what follows can arrive by notice only.
        let deadline = Date().addingTimeInterval(10)
        while try live.readiness().secondsSinceCaughtUp == nil, Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
        try #require(try live.readiness().secondsSinceCaughtUp != nil, "the first poll did not run")
        let session = try auth.register(displayName: "Before")
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("After")), token: session.accessToken)
        var name: String?
        for _ in 0..<60 {
            name = try database.pool.read { db in
                try String.fetchOne(db, sql: "SELECT name FROM applied WHERE user_id = ?", arguments: [session.user.id])
            }
            if name == "After" { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(name == "After")
    }

    @Test("a follower from seq 0 rebuilds the current users after compaction")
    func rebuildFromZero() throws {
        let auth = try AuthFixture()
        var live: [String: SessionReply] = [:]
        var latest: [String: String] = [:]
        for index in 0..<10 {
            let session = try auth.register(displayName: "initial")
            live[session.user.id] = session
            _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("v\(index)")), token: session.accessToken)
            latest[session.user.id] = "v\(index)"
        }
        for (id, session) in live.prefix(3) {
            _ = try auth.client.call(AuthAPI.delete, DeleteRequest(password: "correct horse battery"), token: session.accessToken)
            live[id] = nil
        }
        let database = try followerDatabase(auth)
        let rebuild = follower(auth, database, batchSize: 4)
        _ = try rebuild.catchUp(using: auth.stack.client("auth"))
        let rows = try database.pool.read { db in
            try Row.fetchAll(db, sql: "SELECT user_id, name, times FROM applied WHERE name IS NOT NULL")
                .map { ($0[0] as String, $0[1] as String, $0[2] as Int) }
        }
        #expect(Set(rows.map(\.0)) == Set(live.keys))
        // Each user arrives once (the feed is compacted), with their latest name.
        for (userId, name, times) in rows {
            #expect(name == latest[userId] && times == 1, "\(userId): \(name) applied \(times) times")
        }
    }
}

@Suite("Verifying auth's tokens in another service", .ownThread)
struct OtherServiceTokenTests {
    @Test("a service fetches auth's key on first need and verifies its tokens")
    func fetchesFromAuth() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let verifier = try TokenVerifier.forService(try auth.stack.settings(for: "catalogue"))
        let caller = try verifier.verify(session.accessToken)
        #expect(caller.userID == session.user.id)
        #expect(caller.anonymous == false)
    }

    @Test("keys given in HEREABOUTS_AUTH_PUBLIC_KEYS are used without asking auth")
    func keysFromConfiguration() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let jwks = String(decoding: try JSONValueEncoder().encodeData(try auth.client.call(AuthAPI.publicKey, Empty())), as: UTF8.self)
        // auth's endpoint points nowhere: only the configured key can verify.
        let settings = try ServiceSettings(service: "catalogue", environment: [
            "HEREABOUTS_AUTH_PUBLIC_KEYS": jwks, "HEREABOUTS_AUTH_ENDPOINT": "ipc:///tmp/hereabouts-no-auth.sock",
        ])
        #expect(try TokenVerifier.forService(settings).verify(session.accessToken).userID == session.user.id)
        let broken = try ServiceSettings(service: "catalogue", environment: ["HEREABOUTS_AUTH_PUBLIC_KEYS": "not json"])
        #expect(throws: ServiceError.self) { try TokenVerifier.forService(broken) }
    }

    @Test("when auth does not answer, a token cannot be verified and the caller hears unavailable")
    func authAway() throws {
        let settings = try ServiceSettings(service: "catalogue", environment: [
            "HEREABOUTS_AUTH_ENDPOINT": "ipc:///tmp/hereabouts-no-auth-\(Identifier.random(count: 6)).sock",
        ])
        let verifier = try TokenVerifier.forService(settings)
        let key = try AuthFixture().forgedToken(userID: "u1", sessionID: "s1", issuedAt: Date())
        #expect { try verifier.verify(key) } throws: { ($0 as? ServiceError)?.code == .unavailable }
    }
}
