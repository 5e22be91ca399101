import Contracts
import Foundation
import GRDB
import ServiceClient
import ServiceKitTesting
import Synchronization
import TestThreads
import Testing
import Wire

@Suite("kill -9 under here up", .serialized, .ownThread)
struct CrashTests {
    /// The pid of `executable` among `parent`'s children, from /proc.
    static func child(named executable: String, of parent: Int32) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard fields.count > 1, Int32(fields[1]) == parent,
                  let command = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8),
                  command.hasSuffix("\(executable)\0") || command.contains("/\(executable)\0") else { continue }
            return pid
        }
        return nil
    }

    /// `here up` on free endpoints in a temp directory, plaintext, restarting at once.
    private final class Stack {
        let directory: URL
        var environment: [String: String]
        let up: ChildProcess

        init() throws {
            directory = URL(fileURLWithPath: "/tmp/hb-crash-\(Identifier.random(count: 8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            environment = ["HEREABOUTS_DATA_DIR": directory.path, "HEREABOUTS_LOG_LEVEL": "error", "HEREABOUTS_RATE_LIMIT": "0",
                           "HEREABOUTS_BIN_DIR": ChildProcess.binDirectory.path,
                           "XDG_CONFIG_HOME": directory.appendingPathComponent("config").path]
            for service in ServiceEndpoints.services {
                environment[ServiceEndpoints.requestsVariable(service)] = try ChildProcess.freeEndpoint()
                environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
            }
            up = try ChildProcess("here", arguments: ["up", "--plaintext", "--max-backoff", "0", "--no-http"], environment: environment,
                                  log: directory.appendingPathComponent("up.log"))
            for _ in 0..<600 where !up.logText.contains("all services ready") { Thread.sleep(forTimeInterval: 0.1) }
            guard up.logText.contains("all services ready") else { throw ServiceError.unavailable("here up did not start: \(up.logText)") }
        }

        deinit {
            up.terminate()
            try? FileManager.default.removeItem(at: directory)
        }

        func endpoint(_ service: String) -> String { environment[ServiceEndpoints.requestsVariable(service)]! }

        func client(_ service: String, timeout: TimeInterval = 20) -> ServiceClient {
            ServiceClient(service: service, endpoint: endpoint(service), timeout: timeout, tries: 1)
        }

        func register(_ email: String) throws -> SessionReply {
            let auth = client("auth")
            defer { auth.close() }
            return try auth.call(AuthAPI.register, RegisterRequest(email: email, password: "password1"))
        }

        /// 20 rounds: `write(client, name)` in a closed loop while the service is killed -9. Each acknowledged
        /// write returns what it stored: a key, and what the key should lead to.
        func crashRounds(_ service: String, write: @escaping @Sendable (ServiceClient, String) -> (key: String, value: String)?)
            -> (acknowledged: [String: String], kills: Int) {
            let acknowledged = Mutex<[String: String]>([:])
            var kills = 0
            for round in 0..<20 {
                let stop = Atomic<Bool>(false)
                let done = DispatchSemaphore(value: 0)
                let target = endpoint(service)
                Thread.detachNewThread {
                    defer { done.signal() }
                    let client = ServiceClient(service: service, endpoint: target, timeout: 1, tries: 1)
                    defer { client.close() }
                    var n = 0
                    while !stop.load(ordering: .relaxed) {
                        n += 1
                        if let stored = write(client, "r\(round)-\(n)") { acknowledged.withLock { $0[stored.key] = stored.value } }
                    }
                }
                Thread.sleep(forTimeInterval: 0.2)
                if let pid = CrashTests.child(named: "\(service)-service", of: up.process.processIdentifier) {
                    kill(pid, SIGKILL)
                    kills += 1
                }
                Thread.sleep(forTimeInterval: 0.3)
                stop.store(true, ordering: .relaxed)
                done.wait()
                _ = waitUntilHealthy(service: service, endpoint: target, timeout: 30)
            }
            return (acknowledged.withLock { $0 }, kills)
        }

        /// Reads `service`'s SQLite file directly, read-only: what is really stored.
        func read<T>(_ service: String, _ body: (Database) throws -> T) throws -> T {
            var configuration = Configuration()
            configuration.readonly = true
            let database = try DatabaseQueue(path: directory.appendingPathComponent("\(service).sqlite").path, configuration: configuration)
            return try database.read(body)
        }

        /// What `count` reads from geo.stats once it equals `expected`, or its last reading after 30 s
        /// (-1 when geo did not answer): a follower catches up within that.
        func geoStats(_ count: (GeoStats) -> Int, reaching expected: Int) -> Int {
            let geo = client("geo")
            defer { geo.close() }
            var seen = -1
            for _ in 0..<300 where seen != expected {
                seen = (try? geo.call(GeoAPI.stats, Empty())).map(count) ?? -1
                if seen != expected { Thread.sleep(forTimeInterval: 0.1) }
            }
            return seen
        }

        func integrityCheck(_ service: String) throws -> String? {
            try read(service) { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
        }
    }

    @Test("favourites, chat and auth: 20 kill -9 rounds each during acknowledged writes; every acknowledged write is there once, the files are intact, geo follows auth with nothing missing or doubled")
    func otherWriters() throws {
        let stack = try Stack()
        let provider = try stack.register("provider@example.org")
        let seeker = try stack.register("seeker@example.org"), peer = try stack.register("peer@example.org")
        // Posts for favourites to save, one per acknowledged add at most.
        let catalogue = stack.client("catalogue")
        defer { catalogue.close() }
        var postIds: [String] = []
        for batch in 0..<10 {
            let drafts = (0..<1000).map { PostDraft(kind: "offer", title: "P\(batch)-\($0)", lat: 1, lon: 1, ref: "p\(batch)-\($0)") }
            postIds += try catalogue.call(CatalogueAPI.importPosts, ImportPostsRequest(posts: drafts), token: provider.accessToken).ids
        }
        let favouritesClient = stack.client("favourites")
        defer { favouritesClient.close() }
        // Favourites has followed catalogue once it takes the last post (which the rounds below then leave out).
        var followed = false
        for _ in 0..<300 where !followed {
            followed = (try? favouritesClient.call(FavouritesAPI.add, FavouriteRequest(postId: postIds.last!), token: seeker.accessToken)) != nil
            if !followed { Thread.sleep(forTimeInterval: 0.1) }
        }
        try #require(followed)

        // Favourites: each write saves the next post (ids unique per write, so a doubled add would show as a second row).
        let posts = postIds, seekerToken = seeker.accessToken
        let counter = Atomic<Int>(0)
        let favourites = stack.crashRounds("favourites") { client, id in
            let post = posts[counter.add(1, ordering: .relaxed).oldValue % (posts.count - 1)]
            let saved = try? client.call(FavouritesAPI.add, FavouriteRequest(postId: post), token: seekerToken, id: "f-\(id)")
            return saved == nil ? nil : (post, post)
        }
        var saved: [String] = []
        var cursor: String?
        repeat {
            let page = try favouritesClient.call(FavouritesAPI.list, FavouritesListRequest(limit: 100, cursor: cursor), token: seeker.accessToken)
            saved += page.items.map(\.postId)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(favourites.kills == 20)
        #expect(Set(saved).count == saved.count)
        #expect(Set(favourites.acknowledged.keys).isSubset(of: Set(saved)))
        #expect(try stack.integrityCheck("favourites") == "ok")
        print("favourites crash rounds: \(favourites.kills) kills, \(favourites.acknowledged.count) acknowledged adds, \(saved.count) stored")

        // Chat: each acknowledged message is in the conversation once, seqs without gaps.
        let peerId = peer.user.id
        let chat = stack.crashRounds("chat") { client, id in
            (try? client.call(ChatAPI.send, SendMessageRequest(to: peerId, text: id), token: seekerToken, id: "m-\(id)"))
                .map { ($0.message.text, $0.message.id) }
        }
        let chatClient = stack.client("chat")
        defer { chatClient.close() }
        let conversation = try #require(try chatClient.call(ChatAPI.conversations, ConversationsRequest(), token: seeker.accessToken)
            .conversations.first)
        var messages: [ChatMessage] = []
        var after: Int64 = 0
        while true {
            let page = try chatClient.call(ChatAPI.messages, MessagesRequest(conversationId: conversation.id, after: after, limit: 100),
                                           token: seeker.accessToken).messages
            guard let last = page.last else { break }
            messages += page
            after = last.seq
        }
        #expect(chat.kills == 20)
        #expect(messages.map(\.seq) == Array(1...Int64(messages.count)))
        #expect(Set(messages.map(\.text)).count == messages.count)
        #expect(Set(chat.acknowledged.keys).isSubset(of: Set(messages.map(\.text))))
        #expect(try stack.integrityCheck("chat") == "ok")
        print("chat crash rounds: \(chat.kills) kills, \(chat.acknowledged.count) acknowledged sends, \(messages.count) stored")

        // Auth: each write makes an anonymous account (no password hashing, so many per round) and shares its
        // home, which geo follows through auth.changes; acknowledged once both are.
        let auth = stack.crashRounds("auth") { client, id in
            guard let session = try? client.call(AuthAPI.anonymous, Empty(), id: "a-\(id)"),
                  (try? client.call(AuthAPI.locationSet, LocationSetRequest(lat: 48.2082, lon: 16.3738, discoverable: true),
                                    token: session.accessToken, id: "l-\(id)")) != nil else { return nil }
            return (session.user.id, session.user.id)
        }
        let authClient = stack.client("auth")
        defer { authClient.close() }
        let ids = Array(auth.acknowledged.keys)
        var found = 0
        for start in stride(from: 0, to: ids.count, by: 200) {
            found += try authClient.call(AuthAPI.usersGet, UsersGetRequest(ids: Array(ids[start..<min(start + 200, ids.count)]))).users.count
        }
        #expect(auth.kills == 20)
        #expect(found == ids.count)
        #expect(try stack.integrityCheck("auth") == "ok")
        #expect(!ids.isEmpty && !favourites.acknowledged.isEmpty && !chat.acknowledged.isEmpty)
        // Homes shared in auth's file, acknowledged or not (a reply lost to a kill may follow a commit).
        let shared = try stack.read("auth") { try Set(String.fetchAll($0, sql: "SELECT id FROM user WHERE discoverable = 1 AND lat IS NOT NULL")) }
        #expect(Set(ids).isSubset(of: shared))
        // Geo follows every one of them: it keeps homes by user id, and holds none that auth has not, so equal
        // counts mean nothing missing and nothing doubled.
        let homesInGeo = stack.geoStats(\.users, reaching: shared.count)
        #expect(homesInGeo == shared.count)
        print("auth crash rounds: \(auth.kills) kills, \(ids.count) acknowledged new accounts with a shared home, \(found) found, "
              + "\(shared.count) homes stored, \(homesInGeo) followed by geo")
    }

    @Test("20 rounds of kill -9 during a stream of acknowledged creates: every acknowledged post is there once, the file is intact, geo follows with nothing missing or doubled")
    func catalogueCrashes() throws {
        let stack = try Stack()
        let token = try stack.register("crash@example.org").accessToken
        let rounds = stack.crashRounds("catalogue") { client, title in
            (try? client.call(CatalogueAPI.create, CreatePostRequest(PostDraft(kind: "offer", title: title, lat: 1, lon: 1)),
                              token: token, id: "c-\(title)").post).map { (title, $0.id) }
        }
        #expect(rounds.kills == 20)

        // Every acknowledged create is there, once; nothing else doubled.
        let client = stack.client("catalogue")
        defer { client.close() }
        var stored: [String: String] = [:]
        var titles: [String] = []
        var cursor: String?
        repeat {
            let page = try client.call(CatalogueAPI.list, ListPostsRequest(limit: 100, cursor: cursor))
            for post in page.posts {
                stored[post.title] = post.id
                titles.append(post.title)
            }
            cursor = page.nextCursor
        } while cursor != nil
        let acked = rounds.acknowledged
        #expect(Set(titles).count == titles.count, "a create was applied twice")
        let missing = acked.filter { stored[$0.key] != $0.value }
        #expect(missing.isEmpty, "acknowledged but not stored: \(missing.keys.sorted().prefix(5))")
        print("catalogue crash rounds: 20 kills, \(acked.count) acknowledged creates, \(titles.count) stored, \(missing.count) missing")

        // The file is intact.
        #expect(try stack.integrityCheck("catalogue") == "ok")

        // Geo followed every change: the same posts, none missing or doubled.
        let geoCount = stack.geoStats(\.posts, reaching: titles.count)
        #expect(geoCount == titles.count)
    }

    @Test("geo: 20 kill -9 rounds during acknowledged fence updates; every acknowledged update is kept (its retry gets the same reply back), the fence state is consistent, the file is intact")
    func geoFenceCrashes() throws {
        let stack = try Stack()
        let guide = try stack.register("guide@example.org"), walker = try stack.register("walker@example.org")
        let catalogue = stack.client("catalogue")
        defer { catalogue.close() }
        let fountain = try catalogue.call(CatalogueAPI.create, CreatePostRequest(PostDraft(
            kind: "sight", title: "Fountain", lat: 41.9009, lon: 12.4833, notifyRadius: 100)), token: guide.accessToken).post.id
        let geo = stack.client("geo")
        defer { geo.close() }
        var known = false
        for _ in 0..<300 where !known {
            known = (try? geo.call(GeoAPI.fencesPlan, FencePlanRequest(lat: 41.9009, lon: 12.4833)))?.regions.contains { $0.postId == fountain } ?? false
            if !known { Thread.sleep(forTimeInterval: 0.1) }
        }
        try #require(known)

        // Alternately at the fountain and 1 km away, so every update crosses the fence.
        let positions = [FenceUpdateRequest(lat: 41.9009, lon: 12.4833), FenceUpdateRequest(lat: 41.9099, lon: 12.4833)]
        @Sendable func describe(_ reply: FenceUpdateReply) -> String {
            [reply.entered, reply.exited, reply.inside].map { $0.joined(separator: ",") }.joined(separator: "|")
        }
        let token = walker.accessToken
        let rounds = stack.crashRounds("geo") { client, id in
            let position = Int(id.split(separator: "-").last!)! % 2
            return (try? client.call(GeoAPI.fencesUpdate, positions[position], token: token, id: "g-\(id)"))
                .map { ("\(position) g-\(id)", describe($0)) }
        }
        #expect(rounds.kills == 20)
        #expect(!rounds.acknowledged.isEmpty)

        // Each acknowledged update is kept with its reply: its retry changes nothing and gets the same answer.
        var changed: [String] = []
        for (key, reply) in rounds.acknowledged {
            let parts = key.split(separator: " ")
            let retried = try geo.call(GeoAPI.fencesUpdate, positions[Int(parts[0])!], token: token, id: String(parts[1]))
            if describe(retried) != reply { changed.append(String(parts[1])) }
        }
        #expect(changed.isEmpty, "retries answered differently: \(changed.prefix(5))")

        // The state is the last committed one: standing still at the fountain crosses nothing.
        _ = try geo.call(GeoAPI.fencesUpdate, positions[0], token: token)
        let still = try geo.call(GeoAPI.fencesUpdate, positions[0], token: token)
        #expect(still.entered.isEmpty && still.exited.isEmpty && still.inside == [fountain])
        #expect(try stack.integrityCheck("geo") == "ok")
        print("geo crash rounds: \(rounds.kills) kills, \(rounds.acknowledged.count) acknowledged fence updates, \(changed.count) answered differently on retry")
    }
}
