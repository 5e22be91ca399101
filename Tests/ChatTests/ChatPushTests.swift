import Contracts
import Foundation
import GRDB
@testable import Chat
import Crypto
import NIOCore
@testable import Push
import ServiceClient
import ServiceKit
import ServiceKitTesting
import StackFixtures
import Synchronization
import TestThreads
import Testing
import Wire

/// Chat pushing to a stand-in APNs and Web Push service over HTTP/2 and TLS, which
/// checks the provider token, the VAPID token and decrypts each payload itself.
@Suite("Chat's pushes through a stand-in push service", .ownThread)
struct ChatPushTests {
    typealias User = (token: String, id: String, refresh: String, email: String)

    /// Runs `body`, which must fail with `code`.
    static func expectError(_ code: ErrorCode, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void) throws {
        let error = try #require(throws: ServiceError.self, sourceLocation: sourceLocation) { try body() }
        #expect(error.code == code, "\(error)", sourceLocation: sourceLocation)
    }

    /// A registered user with a display name (the alert's title), and their refresh token.
    static func user(_ fixture: ChatFixture, name: String?) throws -> User {
        let email = "\(Identifier.random(count: 10).lowercased())@example.org"
        let session = try fixture.upstream.authClient.call(AuthAPI.register, RegisterRequest(
            email: email, password: Upstream.password, displayName: name))
        return (session.accessToken, session.user.id, session.refreshToken, email)
    }

    static func apnsToken(_ n: Int) -> String { String(format: "%064x", n) }

    /// Two users, Ana and Ben, that chat has heard of from auth.
    static func anaAndBen(_ fixture: ChatFixture) throws -> (ana: User, ben: User) {
        let users = (try user(fixture, name: "Ana"), try user(fixture, name: "Ben"))
        try fixture.catchUp()
        return users
    }

    /// Chat pushing to `server`, with these variables set (nil: left unset), and Ana and Ben,
    /// Ben with one APNs device.
    static func anaAndBen(at server: PushTestServer, with variables: [String: String?], benApns n: Int) throws
        -> (fixture: ChatFixture, ana: User, ben: User) {
        var environment = server.environment
        for (name, value) in variables { environment[name] = value }
        let fixture = try ChatFixture(environment: environment)
        let (ana, ben) = try anaAndBen(fixture)
        _ = try register(fixture, ben, apns: n)
        return (fixture, ana, ben)
    }

    static func register(_ fixture: ChatFixture, _ user: User, apns n: Int, environment: String = "sandbox") throws -> Device {
        try fixture.client.call(ChatAPI.devicesRegister, DeviceRegisterRequest(
            platform: .apns, token: apnsToken(n).uppercased(), environment: environment, topic: "org.example.divebuddy", lang: "de"),
                                token: user.token).device
    }

    static func register(_ fixture: ChatFixture, _ user: User, webPush name: String, at server: PushTestServer) throws -> Device {
        try fixture.client.call(ChatAPI.devicesRegister, DeviceRegisterRequest(
            platform: .webpush, subscription: WebPushSubscriptionBody(endpoint: server.endpoint(name),
                                                                      keys: .init(p256dh: server.p256dh, auth: server.auth))),
                                token: user.token).device
    }

    static func send(_ fixture: ChatFixture, _ text: String, from user: User, to peer: String, id: String? = nil) throws -> ChatMessage {
        try fixture.client.call(ChatAPI.send, SendMessageRequest(to: peer, text: text), token: user.token, id: id).message
    }

    static func devices(_ fixture: ChatFixture, _ user: User) throws -> [Device] {
        try fixture.client.call(ChatAPI.devices, Empty(), token: user.token).devices
    }

    static func status(_ fixture: ChatFixture) throws -> PushQueueStatus {
        try #require(try fixture.client.call(ChatAPI.health, Empty()).push)
    }

    /// Waits until the outbox is empty (every push delivered, retried out or given up) and
    /// `health` says so: the sender reads its figures after a pass, at a low priority
    /// (`PushPriority`), so under the suite's load that can come a while after the last push.
    static func drained(_ fixture: ChatFixture, timeout: TimeInterval = 30) throws -> PushQueueStatus {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            fixture.chat.pushSender.wake()
            if try fixture.chat.store.pushQueue(now: Date()).pending == 0, try status(fixture).pending == 0 { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: 0.1)
        return try status(fixture)
    }

    @Test("a message pushes to each of the recipient's devices, APNs and Web Push, with the sender's name, the text, the unread badge and the thread; a retried send pushes once")
    func pushesAMessage() throws {
        let server = try PushTestServer(.init(topic: "org.example.divebuddy"))
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = (try Self.user(fixture, name: "Ana Diver"), try Self.user(fixture, name: "Ben"))
        try fixture.catchUp()
        _ = try Self.register(fixture, ben, apns: 1)
        _ = try Self.register(fixture, ben, webPush: "ben-browser", at: server)
        _ = try Self.register(fixture, ana, apns: 2)

        let long = String(repeating: "Wrack am Riff, 18 m. ", count: 10)
        let first = try Self.send(fixture, "Dive on Saturday?", from: ana, to: ben.id)
        let second = try Self.send(fixture, long, from: ana, to: ben.id, id: "retried-send-1")
        let again = try Self.send(fixture, long, from: ana, to: ben.id, id: "retried-send-1")
        #expect(again.id == second.id)

        let pushes = server.waitFor(4)
        #expect(server.errors.isEmpty, "\(server.errors)")
        _ = try Self.drained(fixture)
        #expect(server.pushes.count == 4, "two messages to two devices of Ben's, none to Ana's, none twice")
        let apns = pushes.filter { $0.kind == "apns" }, web = pushes.filter { $0.kind == "webpush" }
        #expect(apns.map(\.address) == [Self.apnsToken(1), Self.apnsToken(1)])
        #expect(web.map(\.address) == ["ben-browser", "ben-browser"])
        for (push, message, badge) in [(apns[0], first, 1), (apns[1], second, 2), (web[0], first, 1), (web[1], second, 2)] {
            #expect(push.title == "Ana Diver")
            #expect(push.badge == badge)
            #expect(push.threadId == message.conversationId)
            #expect(push.data["conversationId"] == message.conversationId && push.data["messageId"] == message.id)
        }
        #expect(apns[0].body == "Dive on Saturday?")
        let excerpt = try #require(apns[1].body)
        #expect(excerpt.count == 120 && excerpt.hasSuffix("…") && long.hasPrefix(excerpt.dropLast()))
        #expect(apns[0].headers["apns-topic"] == "org.example.divebuddy")
        #expect(apns[0].headers["apns-push-type"] == "alert")
        #expect(apns[0].headers["apns-priority"] == "10")
        #expect(apns[0].headers["apns-collapse-id"] == first.id)
        let expiration = try #require(apns[0].headers["apns-expiration"].flatMap(Double.init))
        #expect(abs(expiration - Date().addingTimeInterval(PushSender.giveUpAfter).timeIntervalSince1970) < 120)
        let vapid = try fixture.client.call(ChatAPI.vapidKey, Empty()).publicKey
        #expect(web[0].vapidKey == vapid, "signed with the key GET /v1/push/vapid-key serves")
        #expect(web[0].topic == first.id)
        #expect(server.connections == 1, "one HTTP/2 connection, reused for every push")
        #expect(pushes.allSatisfy { $0.http == "2" })

        let status = try Self.status(fixture)
        #expect(status.sent == 4 && status.failed == 0 && status.pending == 0)
    }

    @Test("the sender takes the messages waiting for their first try a window at a time, in order, and counts them all as pending")
    func firstTriesInWindows() throws {
        let server = try PushTestServer(.init(topic: "org.example.divebuddy"))
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = try Self.anaAndBen(fixture)
        _ = try Self.register(fixture, ben, apns: 40)
        // The store as a held-up sender would find it: 12 messages, none pushed yet.
        fixture.chat.pushSender.stop()
        let store = fixture.chat.store
        try store.database.pool.write { db in
            for n in 1...12 { _ = try store.send("\(n)", from: ana.id, to: .user(ben.id), id: "w\(n)", at: Date(), in: db) }
        }
        #expect(try store.pushQueue(now: Date()).pending == 12)
        let (taken, more) = try Self.takeWindows(of: 5, from: store)
        #expect(taken == [["1", "2", "3", "4", "5"], ["6", "7", "8", "9", "10"], ["11", "12"]], "\(taken)")
        #expect(more == [true, true, false])
        #expect(try store.pushQueue(now: Date()).pending == 0)
    }

    /// Each batch of first tries a sender with windows of `size` would take in turn (their
    /// texts), and whether each said more wait; each batch's cursor recorded as a pass would.
    static func takeWindows(of size: Int, from store: ChatStore) throws -> (taken: [[String]], more: [Bool]) {
        var taken: [[String]] = [], more: [Bool] = []
        while true {
            let batch = try store.pendingPushes(now: Date(), retryLimit: PushSender.batch, firstTryLimit: size)
            guard let cursor = batch.cursor else { return (taken, more) }
            taken.append(batch.pushes.map(\.notification.body))
            more.append(batch.moreFirstTries)
            try store.record(ChatStore.PushOutcomes(cursor: cursor))
        }
    }

    @Test("a window counts messages to push: those to people with no device between them take none of it")
    func windowsCountMessagesToPush() throws {
        let server = try PushTestServer(.init(topic: "org.example.divebuddy"))
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = try Self.anaAndBen(fixture)
        let cleo = try Self.user(fixture, name: "Cleo")
        try fixture.catchUp()
        _ = try Self.register(fixture, ben, apns: 41)
        fixture.chat.pushSender.stop()
        let store = fixture.chat.store
        // Ben's five messages among a hundred to Cleo, who has no device.
        try store.database.pool.write { db in
            for n in 1...100 {
                let toBen = [10, 50, 51, 90, 100].firstIndex(of: n).map { "b\($0 + 1)" }
                _ = try store.send(toBen ?? "c\(n)", from: ana.id, to: .user(toBen == nil ? cleo.id : ben.id), id: "m\(n)", at: Date(), in: db)
            }
        }
        #expect(try store.pushQueue(now: Date()).pending == 5)
        let (taken, more) = try Self.takeWindows(of: 2, from: store)
        #expect(taken == [["b1", "b2"], ["b3", "b4"], ["b5"]], "\(taken)")
        #expect(more == [true, true, false])
        #expect(try store.pushQueue(now: Date()).pending == 0)
    }

    @Test("the sender's thread runs at nice 19 by default, as an equal with HEREABOUTS_PUSH_PRIORITY=normal; the push client's loops at normal priority")
    func pushThreadsInTheBackground() throws {
        #expect(try PushSettings(environment: [:]).priority == .background)
        #expect(try PushSettings(environment: ["HEREABOUTS_PUSH_PRIORITY": "Normal"]).priority == .normal)
        #expect(throws: PushSettings.ConfigurationError.self) { try PushSettings(environment: ["HEREABOUTS_PUSH_PRIORITY": "high"]) }
        let server = try PushTestServer(.init(topic: "org.example.divebuddy"))
        for (setting, nice) in [(nil, ThreadScheduling.backgroundNice), ("normal", Int32(0))] {
            // The sender's thread first, then one loop per core (made before it lowered itself).
            let (fixture, ana, ben) = try Self.anaAndBen(at: server, with: ["HEREABOUTS_PUSH_PRIORITY": setting], benApns: 60)
            let before = server.pushes.count
            _ = try Self.send(fixture, "Boat at eight", from: ana, to: ben.id)
            _ = server.waitFor(before + 1)
            // Each loop names its thread on its first turn: every one has by now or soon.
            let deadline = Date().addingTimeInterval(10)
            while fixture.chat.pushSender.threadIDs.count < 1 + System.coreCount && Date() < deadline {
                Thread.sleep(forTimeInterval: 0.01)
            }
            let threads = fixture.chat.pushSender.threadIDs
            #expect(threads.count == 1 + System.coreCount, "the sender's thread and one loop per core")
            #expect(threads.map(ThreadScheduling.nice(ofThread:)) == [nice] + threads.dropFirst().map { _ in 0 }, "\(setting ?? "default")")
        }
    }

    @Test("pushes leave only over HTTPS: an APNs URL that is not an https one is refused at start, not at each push")
    func apnsURLIsHTTPS() throws {
        let server = try PushTestServer()
        for bad in ["http://localhost:\(server.port)", "localhost:\(server.port)", "https://", "ftp://example.org"] {
            var environment = server.environment
            environment["HEREABOUTS_APNS_URL"] = bad
            #expect(throws: PushSettings.ConfigurationError.self, "\(bad)") { try PushSettings(environment: environment) }
        }
        #expect(try PushSettings(environment: server.environment).apns?.url == server.url)
    }

    @Test("a sender that falls behind moves its passes to the normal-priority lane (HEREABOUTS_PUSH_CATCH_UP), and delivers")
    func catchesUp() throws {
        #expect(try PushSettings(environment: [:]).catchUpAfter == 1)
        #expect(try PushSettings(environment: ["HEREABOUTS_PUSH_CATCH_UP": "0.5"]).catchUpAfter == 0.5)
        for bad in ["0", "-1", "soon", "nan", "inf"] {
            #expect(throws: PushSettings.ConfigurationError.self, "\(bad)") { try PushSettings(environment: ["HEREABOUTS_PUSH_CATCH_UP": bad]) }
        }
        var options = PushTestServer.Options()
        options.delay = 0.4
        let server = try PushTestServer(options)
        for setting in [nil, "normal"] {
            let (fixture, ana, ben) = try Self.anaAndBen(
                at: server, with: ["HEREABOUTS_PUSH_CATCH_UP": "0.1", "HEREABOUTS_PUSH_PRIORITY": setting], benApns: 62)
            let before = server.pushes.count
            // The first push holds its pass for 0.4 s; the next three wait for it, longer than 0.1 s.
            _ = try Self.send(fixture, "First", from: ana, to: ben.id)
            Thread.sleep(forTimeInterval: 0.1)
            for text in ["Second", "Third", "Fourth"] { _ = try Self.send(fixture, text, from: ana, to: ben.id) }
            #expect(server.waitFor(before + 4).count >= before + 4, "\(setting ?? "default")")
            let caughtUp = fixture.chat.pushSender.passesCaughtUp
            #expect(setting == nil ? caughtUp >= 1 : caughtUp == 0, "\(setting ?? "default"): \(caughtUp)")
        }
    }

    @Test("work handed to the lane from its own thread runs there at once")
    func laneRunsItsOwnWork() throws {
        let lane = NormalPriorityLane(name: "test-lane")
        lane.start()
        let answer = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let value = try? lane.run { try lane.run { 42 } }
            answer.withLock { $0 = value }
            done.signal()
        }.start()
        // A lane that waits for itself never stops either: it is left behind then.
        #expect(done.wait(timeout: .now() + 10) == .success, "the lane waited for itself")
        #expect(answer.withLock { $0 } == 42)
        if answer.withLock({ $0 }) != nil { lane.stop() }
    }

    @Test("a background thread's writes run on a thread of normal priority")
    func writesLeaveTheBackground() throws {
        let lane = NormalPriorityLane(name: "test-lane")
        lane.start()
        defer { lane.stop() }
        let seen = Mutex<(own: Int32?, lane: Int32?)>((nil, nil))
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            ThreadScheduling.enterBackground()
            let own = ThreadScheduling.currentThreadID().flatMap(ThreadScheduling.nice(ofThread:))
            let inLane = try? lane.run { ThreadScheduling.currentThreadID().flatMap(ThreadScheduling.nice(ofThread:)) }
            seen.withLock { $0 = (own, inLane ?? nil) }
            done.signal()
        }
        thread.start()
        done.wait()
        let (own, inLane) = seen.withLock { $0 }
        #expect(own == ThreadScheduling.backgroundNice)
        #expect(inLane == 0)
    }

    @Test("a device's pushes arrive in the order their messages were sent, so its badge ends at the newest count; one gone device is forgotten once")
    func inOrder() throws {
        var options = PushTestServer.Options(goneTokens: [Self.apnsToken(31)])
        options.jitter = 0.02
        let server = try PushTestServer(options)
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = try Self.anaAndBen(fixture)
        _ = try Self.register(fixture, ben, apns: 30)
        _ = try Self.register(fixture, ben, apns: 31)
        // Committed in one transaction: one pass of the sender takes them all.
        try fixture.chat.store.database.pool.write { db in
            for n in 1...12 {
                _ = try fixture.chat.store.send("\(n)", from: ana.id, to: .user(ben.id), id: "m\(n)", at: Date(), in: db)
            }
        }
        fixture.chat.pushSender.wake()
        let pushes = server.waitFor(12)
        #expect(pushes.map(\.body) == (1...12).map { "\($0)" }, "\(pushes.map(\.body))")
        let status = try Self.drained(fixture)
        #expect(status.removed == 1 && status.sent == 12, "\(status)")
    }

    @Test("more devices than pushes in flight (HEREABOUTS_PUSH_CONCURRENCY=2): a pass starts what the window has room for, then each as one ends; every push arrives once, each device's in order")
    func narrowWindow() throws {
        var options = PushTestServer.Options()
        options.jitter = 0.02
        let server = try PushTestServer(options)
        let (fixture, ana, ben) = try Self.anaAndBen(at: server, with: ["HEREABOUTS_PUSH_CONCURRENCY": "2"], benApns: 40)
        for n in 41...44 { _ = try Self.register(fixture, ben, apns: n) }
        _ = try Self.register(fixture, ben, webPush: "ben-browser", at: server)
        try fixture.chat.store.database.pool.write { db in
            for n in 1...4 {
                _ = try fixture.chat.store.send("\(n)", from: ana.id, to: .user(ben.id), id: "w\(n)", at: Date(), in: db)
            }
        }
        fixture.chat.pushSender.wake()
        let pushes = server.waitFor(24)
        let byDevice = Dictionary(grouping: pushes, by: \.address).mapValues { $0.map { $0.body ?? "" } }
        #expect(byDevice.count == 6 && byDevice.values.allSatisfy { $0 == ["1", "2", "3", "4"] }, "\(byDevice)")
        let status = try Self.drained(fixture)
        #expect(status.sent == 24 && status.failed == 0, "\(status)")
        #expect(server.pushes.count == 24, "each push once")
    }

    @Test("no push for a muted conversation or from a blocked sender; a sender without a name is worded in the device's language")
    func muteAndBlock() throws {
        let server = try PushTestServer()
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = (try Self.user(fixture, name: nil), try Self.user(fixture, name: "Ben"))
        try fixture.catchUp()
        _ = try Self.register(fixture, ben, apns: 7)
        let first = try Self.send(fixture, "eins", from: ana, to: ben.id)
        #expect(server.waitFor(1).first?.title == "Neue Nachricht", "no name: the device's language (de)")

        let muted = try fixture.client.call(ChatAPI.mute, MuteRequest(conversationId: first.conversationId, muted: true), token: ben.token)
        #expect(muted.muted)
        #expect(try fixture.conversations((token: ben.token, id: ben.id)).conversations.first?.muted == true)
        _ = try Self.send(fixture, "zwei (muted)", from: ana, to: ben.id)
        _ = try fixture.client.call(ChatAPI.mute, MuteRequest(conversationId: first.conversationId, muted: false), token: ben.token)
        _ = try Self.send(fixture, "drei", from: ana, to: ben.id)
        #expect(server.waitFor(2).map(\.body) == ["eins", "drei"])
        #expect(server.pushes.last?.badge == 3, "a muted message still counts as unread")

        _ = try fixture.client.call(ChatAPI.block, BlockRequest(userId: ana.id), token: ben.token)
        #expect(throws: ServiceError.self) { try Self.send(fixture, "vier", from: ana, to: ben.id) }
        _ = try Self.drained(fixture)
        #expect(server.pushes.count == 2)
        // Someone not in the conversation cannot mute it.
        let carl = try Self.user(fixture, name: "Carl")
        try Self.expectError(.permissionDenied) {
            _ = try fixture.client.call(ChatAPI.mute, MuteRequest(conversationId: first.conversationId, muted: true), token: carl.token)
        }
    }

    @Test("a send marks in its message what its pushes need: the unread total, or nothing for a recipient without a device or in a muted conversation; a mute or a block made before the push leaves holds")
    func sendMarksItsPushes() throws {
        let server = try PushTestServer()
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = try Self.anaAndBen(fixture)
        let store = fixture.chat.store
        /// A send through the store (which wakes no sender), and what `then` changes in the
        /// same transaction: no pass of the sender, whenever it runs, can see the message
        /// before the change.
        func send(_ text: String, then change: (ChatStore.Sent, Database) throws -> Void = { _, _ in }) throws -> ChatStore.Sent {
            try store.database.pool.write { db in
                let sent = try store.send(text, from: ana.id, to: .user(ben.id), id: Identifier.sortable(), at: Date(), in: db)
                try change(sent, db)
                return sent
            }
        }
        #expect(try !send("no device yet").pushes, "nothing to push: the sender is not woken")
        _ = try Self.register(fixture, ben, apns: 70)
        let second = try send("a device now") { sent, db in
            try store.setMuted(true, conversation: sent.message.conversationId, for: ben.id, in: db)
        }
        #expect(second.pushes)
        #expect(try !send("muted").pushes)
        let badges = try store.database.pool.read { db in try Int?.fetchAll(db, sql: "SELECT badge FROM message ORDER BY seq") }
        #expect(badges == [nil, 2, nil])

        // "A device now" was marked for a push, and the conversation muted before any pass
        // saw it. Then a block made after a send, before its push.
        _ = try Self.drained(fixture)
        _ = try fixture.client.call(ChatAPI.mute, MuteRequest(conversationId: second.message.conversationId, muted: false), token: ben.token)
        #expect(try send("blocked before it left") { _, db in try store.block(ana.id, by: ben.id, in: db) }.pushes)
        _ = try Self.drained(fixture)
        _ = try fixture.client.call(ChatAPI.unblock, BlockRequest(userId: ana.id), token: ben.token)
        _ = try Self.send(fixture, "after the block", from: ana, to: ben.id)
        #expect(server.waitFor(1).map(\.body) == ["after the block"])
        #expect(try Self.drained(fixture).pending == 0)
    }

    @Test("410 Unregistered and BadDeviceToken forget the device, Web Push 410 the subscription; 429 is tried again")
    func deadDevicesAndBusyService() throws {
        let server = try PushTestServer(.init(goneTokens: [Self.apnsToken(3)], badTokens: [Self.apnsToken(4)], busyFirst: 2,
                                              goneEndpoints: ["old-browser"]))
        var options = ChatService.Options()
        options.pushRetryDelay = 0.05
        let fixture = try ChatFixture(environment: server.environment, options: options)
        let (ana, ben) = try Self.anaAndBen(fixture)
        let live = try Self.register(fixture, ben, apns: 5)
        for n in [3, 4] { _ = try Self.register(fixture, ben, apns: n) }
        _ = try Self.register(fixture, ben, webPush: "old-browser", at: server)
        _ = try Self.send(fixture, "hello", from: ana, to: ben.id)
        let status = try Self.drained(fixture)
        #expect(server.pushes.map(\.address) == [Self.apnsToken(5)], "the live device's push arrives after the 429s")
        #expect(try Self.devices(fixture, ben).map(\.id) == [live.id])
        #expect(status.removed == 3 && status.sent == 1 && status.failed == 0)
        #expect(server.errors.isEmpty, "\(server.errors)")
    }

    @Test("a Web Push service that speaks only HTTP/1.1 gets its pushes, each decrypted and signed as over HTTP/2: over one keep-alive connection, or one a push when the service closes each after its answer",
          arguments: [false, true])
    func http1WebPush(closesConnections: Bool) throws {
        var options = PushTestServer.Options()
        options.http1Only = true
        options.http1Closes = closesConnections
        let server = try PushTestServer(options)
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = try Self.anaAndBen(fixture)
        _ = try Self.register(fixture, ben, webPush: "ben-browser", at: server)
        let sent = try (1...3).map { try Self.send(fixture, "message \($0)", from: ana, to: ben.id) }
        let pushes = server.waitFor(3)
        #expect(server.errors.isEmpty, "\(server.errors)")
        #expect(pushes.map(\.body) == sent.map(\.text))
        #expect(pushes.map(\.badge) == [1, 2, 3])
        #expect(pushes.allSatisfy { $0.http == "1.1" && $0.title == "Ana" })
        let status = try Self.drained(fixture)
        #expect(status.sent == 3 && status.failed == 0 && status.pending == 0)
        #expect(status.lastError == nil, "no push was sent on a connection the service had closed")
        // After the HTTP/2 connection whose ALPN the service refused.
        #expect(server.connections - 1 == (closesConnections ? 3 : 1), "\(server.connections - 1) HTTP/1.1 connections")
    }

    @Test("an HTTP/1.1-only Web Push service: twenty subscriptions pushed side by side over at most 8 keep-alive connections; a 410 there removes its subscription")
    func http1WebPushSideBySide() throws {
        var options = PushTestServer.Options(goneEndpoints: ["cleo-gone"])
        options.http1Only = true
        // Answers a quarter of a second late: a device's push waits for a free connection, or opens one.
        options.delay = 0.25
        let server = try PushTestServer(options)
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = try Self.anaAndBen(fixture)
        let cleo = try Self.user(fixture, name: "Cleo")
        try fixture.catchUp()
        let names = (0..<10).map { "ben-\($0)" } + (0..<9).map { "cleo-\($0)" }
        for name in names { _ = try Self.register(fixture, name.hasPrefix("ben") ? ben : cleo, webPush: name, at: server) }
        _ = try Self.register(fixture, cleo, webPush: "cleo-gone", at: server)
        _ = try Self.send(fixture, "to Ben", from: ana, to: ben.id)
        _ = try Self.send(fixture, "to Cleo", from: ana, to: cleo.id)
        let status = try Self.drained(fixture)
        #expect(server.errors.isEmpty, "\(server.errors)")
        #expect(server.pushes.map(\.address).sorted() == names.sorted())
        #expect(server.pushes.allSatisfy { $0.http == "1.1" && $0.title == "Ana" && $0.body == "to \($0.address.hasPrefix("ben") ? "Ben" : "Cleo")" })
        // The first connection is the HTTP/2 one whose ALPN the service refused. Then requests that
        // find every connection busy open another, up to 8.
        #expect((2...8).contains(server.connections - 1), "\(server.connections - 1) HTTP/1.1 connections")
        #expect(try Self.devices(fixture, cleo).count == 9, "the subscription its service called gone is removed")
        #expect(status.sent == 19 && status.removed == 1 && status.failed == 0 && status.pending == 0)
    }

    @Test("a push service that goes away (GOAWAY) mid-batch: what it did not take leaves again on a new connection, each push once")
    func goAway() throws {
        var options = PushTestServer.Options()
        options.goAwayAfter = 3
        let server = try PushTestServer(options)
        var chatOptions = ChatService.Options()
        chatOptions.pushRetryDelay = 0.05
        let fixture = try ChatFixture(environment: server.environment, options: chatOptions)
        let (ana, ben) = try Self.anaAndBen(fixture)
        for n in 40..<49 { _ = try Self.register(fixture, ben, apns: n) }
        _ = try Self.send(fixture, "everyone", from: ana, to: ben.id)
        let status = try Self.drained(fixture)
        #expect(server.errors.isEmpty, "\(server.errors)")
        #expect(server.pushes.map(\.address).sorted() == (40..<49).map(Self.apnsToken))
        #expect(server.connections == 3, "three streams a connection: \(server.connections)")
        #expect(status.sent == 9 && status.failed == 0 && status.pending == 0)
        // The server keeps a connection it went away from open: chat closes each once its streams are done.
        let deadline = Date().addingTimeInterval(5)
        while server.closedConnections < server.connections && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(server.closedConnections == server.connections, "\(server.closedConnections) of \(server.connections) closed")
    }

    @Test("a push service that resets each stream after answering it (RFC 9113 8.1, as nginx does): every answer counts, on one connection, each push once")
    func resetAfterAnswer() throws {
        var options = PushTestServer.Options()
        options.resetAfterAnswer = true
        let server = try PushTestServer(options)
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = try Self.anaAndBen(fixture)
        for n in 60..<70 { _ = try Self.register(fixture, ben, apns: n) }
        // 300 pushes: more resets than NIO lets a server send in 30 s by default (200).
        for n in 0..<30 { _ = try Self.send(fixture, "dive \(n)?", from: ana, to: ben.id) }
        let status = try Self.drained(fixture)
        #expect(server.errors.isEmpty, "\(server.errors)")
        #expect(server.pushes.count == 300, "\(server.pushes.count) pushes taken")
        #expect(status.sent == 300 && status.failed == 0 && status.pending == 0 && status.lastError == nil, "\(status)")
        #expect(server.connections == 1, "\(server.connections) connections")
    }

    @Test("an HTTP/2 connection left without pushes for its idle time closes; the next push opens another")
    func idleConnectionCloses() throws {
        let server = try PushTestServer()
        let http = PushHTTP(caFile: server.certificate.path, idleTimeout: .seconds(1))
        defer { http.shutdown() }
        func post() throws -> Int {
            try http.post("\(server.url)/3/device/\(Self.apnsToken(60))?probe=1", headers: [("apns-topic", "org.example")], body: Data("{}".utf8))
                .wait().status
        }
        #expect(try post() == 403, "no provider token")
        #expect(try post() == 403)
        #expect(server.connections == 1 && server.closedConnections == 0)
        let deadline = Date().addingTimeInterval(5)
        while server.closedConnections < 1 && Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(server.closedConnections == 1, "closed after a second or two without a push")
        #expect(try post() == 403)
        #expect(server.connections == 2)
    }

    @Test("a push to a base URL and a path: the base's own path comes first, a base with a query is taken whole, one origin for all")
    func baseAndPath() throws {
        let server = try PushTestServer()
        let http = PushHTTP(caFile: server.certificate.path)
        defer { http.shutdown() }
        let path = "/3/device/\(Self.apnsToken(62))", topic = [("apns-topic", "org.example")]
        func post(_ base: String) -> Int? {
            try? http.post(base: base, path: path, headers: topic, body: Data("{}".utf8)).wait().status
        }
        #expect(post(server.url) == 403, "APNs' path: the stand-in's answer without a provider token")
        #expect(post(server.url) == 403, "the base known now")
        #expect(post(server.url + "/apns") == 404, "/apns/3/device/…, which the stand-in does not serve")
        #expect(post(server.url + "/?to=apns") == 404, "a query: the whole URL's path is /?to=apns/3/device/…")
        #expect(try http.post(server.url + path, headers: topic, body: Data("{}".utf8)).wait().status == 403, "as the whole URL")
        #expect(http.originCount == 1 && server.connections == 1)
    }

    @Test("an origin with no push for twice the idle time is forgotten when a new one is met: push services at many hosts do not pile up")
    func staleOriginsForgotten() throws {
        let server = try PushTestServer()
        let http = PushHTTP(caFile: server.certificate.path, idleTimeout: .seconds(1))
        defer { http.shutdown() }
        func post(_ base: String) -> Int? {
            try? http.post("\(base)/3/device/\(Self.apnsToken(61))", headers: [("apns-topic", "org.example")], body: Data("{}".utf8))
                .wait().status
        }
        #expect(post(server.url) == 403)
        let other = server.url.replacingOccurrences(of: "localhost", with: "127.0.0.1")
        _ = post(other)
        #expect(http.originCount == 2, "\(server.url) and \(other)")
        Thread.sleep(forTimeInterval: 2.2)
        #expect(post(server.url) == 403, "the one used just now stays")
        _ = post(server.url.replacingOccurrences(of: "localhost", with: "[::1]"))
        #expect(http.originCount == 2, "\(other) forgotten; \(server.url) kept; the new one added")
    }

    @Test("devices: ten per user, the oldest forgotten; a token registered by another user moves; delete; sign-out and account deletion forget them; bad input is refused")
    func devices() throws {
        let server = try PushTestServer()
        let fixture = try ChatFixture(environment: server.environment)
        let (ana, ben) = try Self.anaAndBen(fixture)
        let first = try Self.register(fixture, ana, apns: 100)
        #expect(first.token == Self.apnsToken(100) && first.environment == "sandbox" && first.lang == "de")
        #expect(try Self.register(fixture, ana, apns: 100).id == first.id, "registered again: the same device")
        for n in 101...110 { _ = try Self.register(fixture, ana, apns: n) }
        let anas = try Self.devices(fixture, ana)
        #expect(anas.count == DeviceRules.maxPerUser)
        #expect(!anas.contains { $0.id == first.id }, "the least recently registered went")

        let moved = try Self.register(fixture, ben, apns: 110)
        #expect(try Self.devices(fixture, ben).map(\.id) == [moved.id])
        #expect(try Self.devices(fixture, ana).count == 9)
        _ = try fixture.client.call(ChatAPI.devicesDelete, DeviceIdRequest(deviceId: moved.id), token: ben.token)
        try Self.expectError(.notFound) { _ = try fixture.client.call(ChatAPI.devicesDelete, DeviceIdRequest(deviceId: moved.id), token: ben.token) }
        let anasOther = try #require(try Self.devices(fixture, ana).first)
        try Self.expectError(.notFound) { _ = try fixture.client.call(ChatAPI.devicesDelete, DeviceIdRequest(deviceId: anasOther.id), token: ben.token) }

        // Signing out the session that registered them forgets them: nothing is pushed.
        _ = try fixture.upstream.authClient.call(AuthAPI.logout, RefreshRequest(refreshToken: ana.refresh))
        let again = try fixture.upstream.authClient.call(AuthAPI.login, LoginRequest(login: ana.email, password: Upstream.password))
        let anaAgain: User = (again.accessToken, ana.id, again.refreshToken, ana.email)
        #expect(try Self.devices(fixture, anaAgain).isEmpty)
        let webDevice = try Self.register(fixture, anaAgain, webPush: "ana-browser", at: server)
        #expect(webDevice.endpoint == server.endpoint("ana-browser"))

        // Deleting the account forgets its devices.
        _ = try fixture.upstream.authClient.call(AuthAPI.delete, DeleteRequest(password: Upstream.password), token: anaAgain.token)
        try fixture.catchUp()
        #expect(try fixture.chat.store.devices(of: ana.id).isEmpty)

        // Bad input, each with its field.
        let bad: [(DeviceRegisterRequest, String)] = [
            (DeviceRegisterRequest(platform: .apns, token: "xyz", topic: "a.b"), "token"),
            (DeviceRegisterRequest(platform: .apns, token: String(repeating: "ab", count: 31) + "a", topic: "a.b"), "token"),
            (DeviceRegisterRequest(platform: .apns, token: Self.apnsToken(1)), "topic"),
            (DeviceRegisterRequest(platform: .apns, token: Self.apnsToken(1), environment: "staging", topic: "a.b"), "environment"),
            (DeviceRegisterRequest(platform: .apns, token: Self.apnsToken(1), topic: "a b"), "topic"),
            (DeviceRegisterRequest(platform: .webpush), "subscription"),
            (DeviceRegisterRequest(platform: .webpush, subscription: .init(endpoint: "http://localhost/push/x",
                                                                           keys: .init(p256dh: server.p256dh, auth: server.auth))),
             "subscription.endpoint"),
            (DeviceRegisterRequest(platform: .webpush, subscription: .init(endpoint: "https://intranet.example/push",
                                                                           keys: .init(p256dh: server.p256dh, auth: server.auth))),
             "subscription.endpoint"),
            (DeviceRegisterRequest(platform: .webpush, subscription: .init(endpoint: server.endpoint("x"),
                                                                           keys: .init(p256dh: String(repeating: "A", count: 87), auth: server.auth))),
             "subscription.keys"),
        ]
        for (request, field) in bad {
            let error = try #require(throws: ServiceError.self) { try fixture.client.call(ChatAPI.devicesRegister, request, token: ben.token) }
            #expect(error.code == .invalidArgument && error.field == field, "\(request): \(error)")
        }
    }

    @Test("pushes queued while the push service cannot be reached are kept across a restart and delivered after it")
    func outboxSurvivesARestart() throws {
        let server = try PushTestServer()
        var unreachable = server.environment
        unreachable["HEREABOUTS_APNS_URL"] = "https://localhost:\(try ChildProcess.freeEndpoint().split(separator: ":").last ?? "1")"
        let fixture = try ChatFixture(environment: unreachable)
        let (ana, ben) = try Self.anaAndBen(fixture)
        _ = try Self.register(fixture, ben, apns: 9)
        _ = try Self.send(fixture, "kept", from: ana, to: ben.id)
        // Asked as often as it answers: the error must never show before the retry it caused is counted.
        let deadline = Date().addingTimeInterval(20)
        var status = try Self.status(fixture)
        while status.lastError == nil && Date() < deadline { status = try Self.status(fixture) }
        #expect(status.lastError != nil && status.pending == 1, "\(status)")
        try fixture.restart(environment: server.environment)
        try fixture.chat.store.database.pool.write { db in try db.execute(sql: "UPDATE push_outbox SET due_at = 0") }
        fixture.chat.pushSender.wake()
        #expect(server.waitFor(1).map(\.body) == ["kept"])
        #expect(try Self.drained(fixture).pending == 0)
    }
}

/// The provider token's life, which the stand-in cannot see (it would take 40 minutes).
@Suite("APNs provider tokens")
struct ProviderTokenTests {
    @Test("a provider token is kept for 40 minutes, then signed anew with a new iat; each verifies against the key's public half")
    func renewal() throws {
        let key = P256.Signing.PrivateKey()
        let client = APNsClient(credentials: APNsCredentials(keyID: "KEY0000001", teamID: "TEAM000001", privateKey: key),
                                url: "https://localhost:1", http: PushHTTP())
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let first = try client.providerToken(now: start)
        #expect(try client.providerToken(now: start.addingTimeInterval(39 * 60)) == first)
        let renewed = try client.providerToken(now: start.addingTimeInterval(41 * 60))
        #expect(renewed != first)
        for (token, issued) in [(first, start), (renewed, start.addingTimeInterval(41 * 60))] {
            let parts = token.split(separator: ".").map(String.init)
            try #require(parts.count == 3)
            let header = try #require(Push.Base64URL.decode(parts[0]).flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] })
            let claims = try #require(Push.Base64URL.decode(parts[1]).flatMap { try JSONSerialization.jsonObject(with: $0) as? [String: Any] })
            #expect(header["alg"] as? String == "ES256" && header["kid"] as? String == "KEY0000001")
            #expect(claims["iss"] as? String == "TEAM000001" && claims["iat"] as? Int == Int(issued.timeIntervalSince1970))
            let signature = try P256.Signing.ECDSASignature(rawRepresentation: try #require(Push.Base64URL.decode(parts[2])))
            #expect(key.publicKey.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8)))
        }
    }
}

/// The payloads as written byte by byte, read back by Foundation's parser.
@Suite("Push payloads")
struct PushPayloadTests {
    static let awkward = "He said \"hi\" \\ then\nleft\t\u{1}; 🤿 Köln"
    static let notification = PushNotification(title: awkward, body: "body \u{1F}", badge: 3, threadId: "c\"1", collapseId: "m1",
                                               data: ["conversationId": "c\"1", "messageId": "m1", "aps": "not Apple's"])

    static func object(_ data: Data) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    @Test("APNs: aps with the alert, badge, sound and thread, the app's keys beside it; any text survives escaping")
    func apns() throws {
        let data = APNsClient.payload(Self.notification)
        let payload = try Self.object(data)
        let aps = try #require(payload["aps"] as? [String: Any])
        let alert = try #require(aps["alert"] as? [String: Any])
        #expect(alert["title"] as? String == Self.awkward && alert["body"] as? String == "body \u{1F}")
        #expect(aps["badge"] as? Int == 3 && aps["sound"] as? String == "default" && aps["thread-id"] as? String == "c\"1")
        #expect(payload["conversationId"] as? String == "c\"1" && payload["messageId"] as? String == "m1")
        #expect(Set(payload.keys) == ["aps", "conversationId", "messageId"])  // the app's "aps" does not replace Apple's
        #expect(APNsClient.payload(Self.notification) == data)  // the same bytes each time
    }

    @Test("Web Push: title, body, badge, tag and data, as the console's service worker reads them")
    func webPush() throws {
        let payload = try Self.object(WebPushClient.payload(Self.notification))
        #expect(payload["title"] as? String == Self.awkward && payload["body"] as? String == "body \u{1F}")
        #expect(payload["badge"] as? Int == 3 && payload["tag"] as? String == "c\"1")
        let data = try #require(payload["data"] as? [String: String])
        #expect(data == ["conversationId": "c\"1", "messageId": "m1", "aps": "not Apple's"])
        let bare = try Self.object(WebPushClient.payload(PushNotification(title: "t", body: "b")))
        #expect(Set(bare.keys) == ["title", "body", "data"])
    }
}
