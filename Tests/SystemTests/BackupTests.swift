import Contracts
import EdgeFixtures
import Foundation
import Gateway
import GRDB
import Synchronization
import TestThreads
import Testing
import Wire

/// `here backup` while the stack takes writes, and `here restore` into a new data
/// directory: what was acknowledged before the backup began is all there.
@Suite("Backups under load", .ownThread)
struct BackupTests {
    @Test("here backup under creates, favourites and chat sends, then here restore into a new data directory: every write acknowledged before the backup began is there, the files pass integrity_check, and the restored stack serves")
    func backupAndRestore() throws {
        let backupDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("hb-backup-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: backupDirectory) }
        let restoredData = FileManager.default.temporaryDirectory.appendingPathComponent("hb-restored-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: restoredData) }

        let stack = try EdgeStack("backup")
        let seller = try stack.register("seller@example.org")
        let buyer = try stack.register("buyer@example.org")
        let sellerClient = stack.client.signed(seller.accessToken), buyerClient = stack.client.signed(buyer.accessToken)

        // Writes keep coming from another thread; each acknowledged one is noted with when.
        struct Acknowledged: Sendable { var posts: [(String, Date)] = []; var favourites: [(String, Date)] = []; var messages: [(String, Date)] = [] }
        let acknowledged = Mutex(Acknowledged())
        let stop = Atomic<Bool>(false)
        let writer = Thread {
            var number = 0
            while !stop.load(ordering: .relaxed) {
                number += 1
                guard let post = try? sellerClient.post("/v1/posts", ["kind": "offer", "title": .string("Backup lamp \(number)"),
                                                                       "lat": 52.09, "lon": 5.12]),
                      post.status == 201, let id = try? post.decode(PostReply.self).post.id else { continue }
                acknowledged.withLock { $0.posts.append((id, Date())) }
                if let saved = try? buyerClient.put("/v1/favourites/\(id)"), saved.status < 300 {
                    acknowledged.withLock { $0.favourites.append((id, Date())) }
                }
                if let sent = try? buyerClient.post("/v1/messages", ["to": .string(seller.user.id), "text": .string("Is lamp \(number) still there?")]),
                   sent.status == 201, let message = try? sent.decode(MessageReply.self).message.id {
                    acknowledged.withLock { $0.messages.append((message, Date())) }
                }
            }
        }
        writer.start()
        while acknowledged.withLock({ $0.posts.count }) < 5 { Thread.sleep(forTimeInterval: 0.05) }
        let began = Date()
        let backup = try here(["backup", backupDirectory.path, "--json"], environment: stack.environment)
        #expect(backup.status == 0, "\(backup.err)")
        // The op writes only under the service's own backups directory, by a plain name.
        let refused = try here(["call", "auth.backup", #"{"name":"../../etc"}"#], environment: stack.environment)
        #expect(refused.status != 0 && refused.err.contains("name"), "\(refused)")
        Thread.sleep(forTimeInterval: 0.3)
        stop.store(true, ordering: .relaxed)
        while !writer.isFinished { Thread.sleep(forTimeInterval: 0.05) }
        stack.stop()
        let before = acknowledged.withLock { state in
            (posts: state.posts.filter { $0.1 < began }.map(\.0), favourites: state.favourites.filter { $0.1 < began }.map(\.0),
             messages: state.messages.filter { $0.1 < began }.map(\.0))
        }
        #expect(!before.posts.isEmpty && !before.favourites.isEmpty && !before.messages.isEmpty)

        // The manifest, and a restore into a new data directory; the copies are whole.
        let manifest = try JSONParser.parse(Data(contentsOf: backupDirectory.appendingPathComponent("manifest.json")))
        let services = manifest["services"]?.arrayValue?.compactMap { $0.objectValue?["service"]?.stringValue }
        #expect(services == BackupAPI.order, "\(manifest)")
        let restore = try here(["restore", backupDirectory.path, "--data", restoredData.path], environment: stack.environment)
        #expect(restore.status == 0, "\(restore.err)")
        for service in BackupAPI.order {
            let file = restoredData.appendingPathComponent("\(service).sqlite").path
            let check = try DatabaseQueue(path: file).read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
            #expect(check == "ok", "\(service): \(check ?? "nothing")")
        }

        // The restored stack serves: the accounts sign in, every acknowledged write is there and searchable.
        let restored = try EdgeStack("restored", environment: ["HEREABOUTS_DATA_DIR": restoredData.path])
        defer { restored.stop() }
        let login = try restored.client.post("/v1/auth/login", ["login": "buyer@example.org", "password": "password1"])
        #expect(login.status == 200, "\(login)")
        let buyerAgain = restored.client.signed(try login.decode(SessionReply.self).accessToken)
        for id in before.posts {
            #expect(try restored.client.get("/v1/posts/\(id)").status == 200, "post \(id)")
        }
        let found = try restored.client.get("/v1/search?lat=52.09&lon=5.12&radius=1000&q=backup%20lamp&limit=100").object()
        let hits = Set(found["hits"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } ?? [])
        #expect(Set(before.posts).isSubset(of: hits), "\(Set(before.posts).subtracting(hits).count) not found")
        let saved = try buyerAgain.get("/v1/favourites?limit=100").object()
        let savedIds = Set(saved["items"]?.arrayValue?.compactMap { $0.objectValue?["postId"]?.stringValue } ?? [])
        #expect(Set(before.favourites).isSubset(of: savedIds), "\(Set(before.favourites).subtracting(savedIds).count) favourites missing")
        let conversations = try buyerAgain.get("/v1/conversations").object()
        let conversation = try #require(conversations["conversations"]?.arrayValue?.first?.objectValue?["id"]?.stringValue)
        let messages = try buyerAgain.get("/v1/conversations/\(conversation)/messages?limit=100").object()
        let messageIds = Set(messages["messages"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } ?? [])
        #expect(Set(before.messages).isSubset(of: messageIds), "\(Set(before.messages).subtracting(messageIds).count) messages missing")
        // Restored as a whole set, the followers' cursors and their sources' feeds are of
        // one backup: they follow on from their cursors, no feed is replayed.
        for follower in ["geo", "favourites", "chat", "catalogue"] {
            let log = try String(contentsOf: restoredData.appendingPathComponent("logs/\(follower).log"), encoding: .utf8)
            #expect(!log.contains("replaying"), "\(follower): \(log.suffix(500))")
        }
    }

    @Test("here backup refuses a directory that holds other files, up front and in words; one that fails half-way leaves nothing behind")
    func failedBackupsLeaveNothing() throws {
        let stack = try EdgeStack("backup-fails")
        let data = URL(fileURLWithPath: stack.environment["HEREABOUTS_DATA_DIR"]!)
        let busy = FileManager.default.temporaryDirectory.appendingPathComponent("hb-busy-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: busy) }
        try FileManager.default.createDirectory(at: busy, withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: busy.appendingPathComponent("catalogue.sqlite"))
        let refused = try here(["backup", busy.path], environment: stack.environment)
        #expect(refused.status == 1 && refused.err.contains("is not empty (catalogue.sqlite)"), "\(refused)")
        #expect(!refused.err.contains("NSCocoaErrorDomain") && !refused.err.contains("Error Domain"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: busy.path) == ["catalogue.sqlite"])
        #expect(try Data(contentsOf: busy.appendingPathComponent("catalogue.sqlite")) == Data("mine".utf8))
        #expect((try? FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("backups").path)) ?? [] == [])

        // Auth, the last service asked, does not answer: what the others copied is taken away again.
        let authPid = try #require(CrashTests.child(named: "auth-service", of: stack.up.process.processIdentifier))
        #expect(FreezeTests.stop(authPid))
        defer { kill(authPid, SIGCONT) }
        let fresh = FileManager.default.temporaryDirectory.appendingPathComponent("hb-fresh-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: fresh) }
        #expect {
            try Backups.take(into: fresh, gateway: Gateway(environment: stack.environment), timeout: 2)
        } throws: { error in
            (error as? GatewayError)?.message.contains("the backup failed and was undone") == true
        }
        #expect(!FileManager.default.fileExists(atPath: fresh.path), "the directory made for it is gone")
        let left = (try? FileManager.default.contentsOfDirectory(atPath: data.appendingPathComponent("backups").path)) ?? []
        #expect(left.isEmpty, "copies left at the services: \(left)")
    }

    @Test("catalogue and auth restored to an older backup: geo, favourites and chat follow them back, and nothing the restored files lack stays searchable, saved or reachable")
    func followersFollowARestoreBack() throws {
        let backupDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("hb-backup-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: backupDirectory) }
        let stack = try EdgeStack("followback")
        let seller = try stack.register("seller@example.org")
        let buyer = try stack.register("buyer@example.org")
        let buyerClient = stack.client.signed(buyer.accessToken)
        func create(_ title: String, by session: SessionReply) throws -> String {
            let reply = try stack.client.signed(session.accessToken).post("/v1/posts", ["kind": "offer", "title": .string(title), "lat": 52.09, "lon": 5.12])
            #expect(reply.status == 201, "\(reply)")
            return try reply.decode(PostReply.self).post.id
        }
        func searched(_ client: EdgeClient) throws -> Set<String> {
            let found = try client.get("/v1/search?lat=52.09&lon=5.12&radius=1000&q=kettle&limit=100").object()
            return Set(found["hits"]?.arrayValue?.compactMap { $0.objectValue?["id"]?.stringValue } ?? [])
        }
        func waitFor(_ what: String, _ condition: () throws -> Bool) throws {
            let deadline = Date().addingTimeInterval(60)
            while try !condition() {
                guard Date() < deadline else { Issue.record("waited a minute for \(what)"); return }
                Thread.sleep(forTimeInterval: 0.2)
            }
        }
        let before = try create("Kettle before", by: seller)
        // Favourites knows a post once it has followed catalogue's feed to it: on a busy
        // machine that can take longer than this test takes to ask.
        try waitFor("the first kettle saved") { try buyerClient.put("/v1/favourites/\(before)").status < 300 }
        try waitFor("the first kettle searchable") { try searched(stack.client) == [before] }
        #expect(try here(["backup", backupDirectory.path], environment: stack.environment).status == 0)

        // After the backup: a new user, their post, a favourite of it, a message to them.
        let late = try stack.register("late@example.org")
        let after = try create("Kettle after", by: late)
        try waitFor("the second kettle saved") { try buyerClient.put("/v1/favourites/\(after)").status < 300 }
        #expect(try buyerClient.post("/v1/messages", ["to": .string(late.user.id), "text": "Still for sale?"]).status == 201)
        try waitFor("both kettles searchable") { try searched(stack.client) == [before, after] }
        stack.stop()

        // Catalogue and auth go back; geo, favourites and chat keep their newer files.
        let restore = try here(["restore", backupDirectory.path, "--only", "catalogue,auth"], environment: stack.environment)
        #expect(restore.status == 0, "\(restore.err)")
        #expect(restore.out.contains("restored catalogue, auth"), "\(restore.out)")
        let restored = try EdgeStack("followback-restored", environment: ["HEREABOUTS_DATA_DIR": stack.environment["HEREABOUTS_DATA_DIR"]!])
        defer { restored.stop() }
        let buyerAgain = restored.client.signed(buyer.accessToken)
        try waitFor("geo to drop the later kettle") { try searched(restored.client) == [before] }
        try waitFor("favourites to drop the later kettle") {
            let saved = try buyerAgain.get("/v1/favourites?limit=100").object()
            return Set(saved["items"]?.arrayValue?.compactMap { $0.objectValue?["postId"]?.stringValue } ?? []) == [before]
        }
        #expect(try restored.client.get("/v1/posts/\(after)").status == 404)
        // The later user is gone from auth, so from chat: no message reaches them, their token is refused.
        try waitFor("chat to learn the later user is gone") {
            let sent = try buyerAgain.post("/v1/messages", ["to": .string(late.user.id), "text": "Hello?"])
            // Sent while chat still knows them; then the user is not_found, as one deleted is, and nothing else.
            #expect(sent.status == 201 || (sent.status == 404 && sent.problemCode == "not_found"), "\(sent)")
            return sent.status == 404
        }
        #expect(try restored.client.signed(late.accessToken).get("/v1/conversations").status == 401)
        #expect(try restored.client.post("/v1/auth/login", ["login": "late@example.org", "password": "password1"]).status == 401)
        // What the backup had is all there and works.
        #expect(try buyerAgain.post("/v1/messages", ["to": .string(seller.user.id), "text": "Still for sale?"]).status == 201)
        #expect(stack.logs.log(of: "geo").contains("replaying it from the start"))
    }
}
