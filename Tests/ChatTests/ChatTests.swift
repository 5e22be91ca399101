import Contracts
import Foundation
@testable import Chat
import GRDB
import ServiceClient
import ServiceKit
import ServiceKitTesting
import StackFixtures
import TestThreads
import Testing
import Wire
import ZeroMQ

/// Auth, catalogue and chat in this process, chat following auth.
final class ChatFixture {
    let upstream: Upstream
    private(set) var chat: ChatService
    let client: ServiceClient
    private let options: ChatService.Options

    /// `environment` adds to chat's settings.
    init(environment extra: [String: String] = [:], options: ChatService.Options = .init()) throws {
        upstream = try Upstream()
        self.options = options
        chat = try Self.chat(upstream, environment: extra, options: options)
        try upstream.stack.start(chat)
        client = upstream.stack.client("chat", timeout: 20)
    }

    private static func chat(_ upstream: Upstream, environment extra: [String: String], options: ChatService.Options) throws -> ChatService {
        var environment = upstream.stack.environment
        environment["HEREABOUTS_RATE_LIMIT"] = "0"
        environment.merge(extra) { $1 }
        return try ChatService(settings: try ServiceSettings(service: "chat", overrides: .init(workers: 2), environment: environment),
                               options: options, logger: TestStack.logger("chat"))
    }

    /// Stops chat and starts it again on its file, with `environment` added to the stack's.
    func restart(environment extra: [String: String]) throws {
        upstream.stack.stop(chat)
        chat = try Self.chat(upstream, environment: extra, options: options)
        try upstream.stack.start(chat)
    }

    func catchUp() throws {
        try upstream.wait(for: "chat", to: try upstream.authLastSeq()) { try chat.userFollower.cursor() }
    }

    /// Registered users chat knows about.
    func users(_ count: Int) throws -> [(token: String, id: String)] {
        let users = try (0..<count).map { _ in try upstream.user() }
        try catchUp()
        return users
    }

    @discardableResult
    func send(_ text: String, from user: (token: String, id: String), to peer: String) throws -> ChatMessage {
        try client.call(ChatAPI.send, SendMessageRequest(to: peer, text: text), token: user.token).message
    }

    func conversations(_ user: (token: String, id: String), limit: Int? = nil, cursor: String? = nil) throws -> ConversationsReply {
        try client.call(ChatAPI.conversations, ConversationsRequest(limit: limit, cursor: cursor), token: user.token)
    }
}

@Suite("Chat through the socket", .ownThread)
struct ChatTests {
    @Test("one conversation per pair, seq per conversation, unread counts follow the read mark, paging by before/after")
    func conversation() throws {
        let fixture = try ChatFixture()
        let users = try fixture.users(2)
        let ann = users[0], bob = users[1]
        let first = try fixture.send("Dive on Saturday?", from: ann, to: bob.id)
        #expect(first.seq == 1 && first.senderId == ann.id && abs(first.sentAt.timeIntervalSinceNow) < 60)
        let reply = try fixture.client.call(ChatAPI.send, SendMessageRequest(conversationId: first.conversationId, text: "Yes! Zeeland?"),
                                            token: bob.token).message
        let third = try fixture.send("Zeeland it is", from: ann, to: bob.id)
        #expect(reply.seq == 2 && third.seq == 3 && third.conversationId == first.conversationId)

        let bobs = try fixture.conversations(bob).conversations
        #expect(bobs.count == 1)
        #expect(bobs[0].id == first.conversationId && bobs[0].peerIds == [ann.id] && bobs[0].deletedPeerIds.isEmpty)
        #expect(bobs[0].lastMessage == third && bobs[0].unread == 2)  // his own reply never counts
        #expect(try fixture.conversations(ann).conversations.first?.unread == 1)

        func read(_ seq: Int64) throws -> Int {
            try fixture.client.call(ChatAPI.read, ReadMarkRequest(conversationId: first.conversationId, seq: seq), token: bob.token).unread
        }
        #expect(try read(1) == 1)
        #expect(try read(0) == 1)  // a mark never moves back
        #expect(try read(99) == 0)  // nor past the last message:
        #expect(try fixture.conversations(bob).conversations.first?.unread == 0)
        // a mark at 99 would hide the next message; it is unread.
        let fourth = try fixture.send("one more", from: ann, to: bob.id)
        #expect(try fixture.conversations(bob).conversations.first?.unread == 1)
        #expect(try read(fourth.seq) == 0)

        // 25 more, then pages: the latest, scroll-back by `before`, catch-up by `after`.
        for index in 0..<25 { try fixture.send("m\(index)", from: index % 2 == 0 ? ann : bob, to: index % 2 == 0 ? bob.id : ann.id) }
        func page(before: Int64? = nil, after: Int64? = nil, limit: Int? = nil) throws -> [Int64] {
            try fixture.client.call(ChatAPI.messages, MessagesRequest(conversationId: first.conversationId, before: before, after: after,
                                                                      limit: limit), token: ann.token).messages.map(\.seq)
        }
        #expect(try page(limit: 5) == Array(25...29))
        #expect(try page(before: 25, limit: 5) == Array(20...24))
        #expect(try page(before: 3, limit: 5) == [1, 2])
        #expect(try page(after: 27, limit: 5) == [28, 29])
        #expect(try page(after: 0, limit: 3) == [1, 2, 3])
        #expect(try page() == Array(1...29))
        let texts = try fixture.client.call(ChatAPI.messages, MessagesRequest(conversationId: first.conversationId, limit: 2),
                                            token: bob.token).messages.map(\.text)
        #expect(texts == ["m23", "m24"])
    }

    @Test("conversations are ordered by latest activity and page by cursor; three users, each sees only their own")
    func ordering() throws {
        let fixture = try ChatFixture()
        let users = try fixture.users(4)
        let ann = users[0], bob = users[1], cid = users[2], dee = users[3]
        let withBob = try fixture.send("hi bob", from: ann, to: bob.id).conversationId
        let withCid = try fixture.send("hi cid", from: ann, to: cid.id).conversationId
        let withDee = try fixture.send("hi dee", from: dee, to: ann.id).conversationId
        try fixture.send("bob again", from: bob, to: ann.id)
        #expect(try fixture.conversations(ann).conversations.map(\.id) == [withBob, withDee, withCid])
        let firstPage = try fixture.conversations(ann, limit: 2)
        #expect(firstPage.conversations.map(\.id) == [withBob, withDee])
        let secondPage = try fixture.conversations(ann, limit: 2, cursor: firstPage.nextCursor)
        #expect(secondPage.conversations.map(\.id) == [withCid] && secondPage.nextCursor == nil)
        #expect(try fixture.conversations(cid).conversations.map(\.id) == [withCid])
        // A non-member may not read or write a conversation; an unknown one is not_found.
        #expect(fixture.client.failure(ChatAPI.messages, MessagesRequest(conversationId: withBob), token: cid.token)?.code
                == .permissionDenied)
        #expect(fixture.client.failure(ChatAPI.send, SendMessageRequest(conversationId: withBob, text: "x"), token: cid.token)?.code
                == .permissionDenied)
        #expect(fixture.client.failure(ChatAPI.read, ReadMarkRequest(conversationId: withBob, seq: 1), token: cid.token)?.code
                == .permissionDenied)
        #expect(fixture.client.failure(ChatAPI.messages, MessagesRequest(conversationId: "nope"), token: cid.token)?.summary
                == "not_found conversationId")
    }

    @Test("with HEREABOUTS_REQUIRE_VERIFIED_EMAIL=writes, a message waits for the sender's confirmed address; reading does not")
    func confirmedSenders() throws {
        let fixture = try ChatFixture(environment: ["HEREABOUTS_REQUIRE_VERIFIED_EMAIL": "writes"])
        let users = try fixture.users(2)
        let refused = fixture.client.failure(ChatAPI.send, SendMessageRequest(to: users[1].id, text: "hi"), token: users[0].token)
        #expect(refused?.code == .permissionDenied && refused?.message.contains("confirm your email address") == true, "\(String(describing: refused))")
        #expect(try fixture.conversations(users[0]).conversations.isEmpty)
        // The operator vouches for the address (as a demo does); chat hears it from auth's feed.
        _ = try fixture.upstream.authClient.call(AuthAPI.emailConfirm, EmailRequest(email: "user1@example.org"))
        try fixture.catchUp()
        #expect(try fixture.send("hi", from: users[0], to: users[1].id).seq == 1)
    }

    @Test("sending to oneself, to an unknown user, as an anonymous user, and to someone who blocked you is refused")
    func refusals() throws {
        let fixture = try ChatFixture()
        let users = try fixture.users(2)
        let ann = users[0], bob = users[1]
        #expect(fixture.client.failure(ChatAPI.send, SendMessageRequest(to: ann.id, text: "me"), token: ann.token)?.summary
                == "invalid_argument to")
        #expect(fixture.client.failure(ChatAPI.send, SendMessageRequest(to: "nobody", text: "x"), token: ann.token)?.summary
                == "not_found to")
        let anonymous = try fixture.upstream.anonymous()
        try fixture.catchUp()
        #expect(fixture.client.failure(ChatAPI.send, SendMessageRequest(to: bob.id, text: "x"), token: anonymous.token)?.code
                == .permissionDenied)
        // An anonymous user may be written to and read their conversations.
        let toAnonymous = try fixture.send("welcome", from: bob, to: anonymous.id)
        #expect(try fixture.conversations((anonymous.token, anonymous.id)).conversations.first?.lastMessage == toAnonymous)

        _ = try fixture.client.call(ChatAPI.block, BlockRequest(userId: ann.id), token: bob.token)
        _ = try fixture.client.call(ChatAPI.block, BlockRequest(userId: ann.id), token: bob.token)  // twice: fine
        #expect(fixture.client.failure(ChatAPI.send, SendMessageRequest(to: bob.id, text: "hello?"), token: ann.token)?.code
                == .permissionDenied)
        try fixture.send("I can still write to you", from: bob, to: ann.id)  // a block is one way
        #expect(fixture.client.failure(ChatAPI.block, BlockRequest(userId: bob.id), token: bob.token)?.summary == "invalid_argument userId")
        #expect(fixture.client.failure(ChatAPI.block, BlockRequest(userId: "nobody"), token: bob.token)?.summary == "not_found userId")
        _ = try fixture.client.call(ChatAPI.unblock, BlockRequest(userId: ann.id), token: bob.token)
        #expect(try fixture.send("hello again", from: ann, to: bob.id).seq == 2)
    }

    @Test("a deleted user's conversations stay readable for the other, marked deleted; they receive nothing more")
    func deletedUser() throws {
        let fixture = try ChatFixture()
        let users = try fixture.users(2)
        let ann = users[0], bob = users[1]
        let message = try fixture.send("bye", from: ann, to: bob.id)
        _ = try fixture.upstream.authClient.call(AuthAPI.delete, DeleteRequest(password: Upstream.password), token: ann.token)
        try fixture.catchUp()
        let conversation = try #require(try fixture.conversations(bob).conversations.first)
        #expect(conversation.peerIds == [ann.id] && conversation.deletedPeerIds == [ann.id] && conversation.lastMessage == message)
        #expect(try fixture.client.call(ChatAPI.messages, MessagesRequest(conversationId: message.conversationId), token: bob.token)
                .messages == [message])
        #expect(fixture.client.failure(ChatAPI.send, SendMessageRequest(to: ann.id, text: "?"), token: bob.token)?.summary == "not_found to")
        #expect(fixture.client.failure(ChatAPI.send, SendMessageRequest(conversationId: message.conversationId, text: "?"),
                                       token: bob.token)?.summary == "not_found conversationId")
        #expect(fixture.client.failure(ChatAPI.conversations, ConversationsRequest(), token: ann.token)?.code == .unauthenticated)
    }

    @Test("each member's SUB gets every message exactly once, in seq order")
    func events() throws {
        let fixture = try ChatFixture()
        let users = try fixture.users(2)
        let ann = users[0], bob = users[1]
        let endpoint = try #require(fixture.upstream.stack.eventsEndpoint("chat"))
        func subscriber(_ userId: String) throws -> Socket {
            let socket = try ZeroMQ.Context.shared.makeSocket(.subscribe)
            try socket.set(.subscribe(Data(ChatAPI.messageTopic(userId: userId).utf8)))
            try socket.set(.receiveTimeout(milliseconds: 3000))
            try socket.connect(endpoint)
            return socket
        }
        let annSocket = try subscriber(ann.id), bobSocket = try subscriber(bob.id)
        defer { annSocket.close(); bobSocket.close() }
        // A service (the edge) takes every member's messages by the topics' prefix.
        let everyone = try EventSubscriber(endpoint: endpoint, curve: nil)
        defer { everyone.close() }
        try everyone.subscribe(ChatAPI.messageTopicPrefix)
        Thread.sleep(forTimeInterval: 0.3)
        var sent: [ChatMessage] = []
        for index in 0..<20 {
            sent.append(try fixture.send("n\(index)", from: index % 2 == 0 ? ann : bob, to: index % 2 == 0 ? bob.id : ann.id))
        }
        for (socket, userId) in [(annSocket, ann.id), (bobSocket, bob.id)] {
            var received: [ChatMessage] = []
            for _ in 0..<20 {
                let frames = try #require(try socket.receiveMessage(), "\(userId) got \(received.count) of 20")
                #expect(frames.first == Data(ChatAPI.messageTopic(userId: userId).utf8))
                received.append(try JSONValueDecoder().decode(ChatMessage.self, from: frames[1]))
            }
            #expect(received == sent)
            // And nothing more.
            try socket.set(.receiveTimeout(milliseconds: 200))
            #expect(try socket.receiveMessage() == nil)
        }
        var fannedOut: [String] = []
        while let event = try everyone.next(timeout: 1) { fannedOut.append(event.topic) }
        #expect(fannedOut.count == 40)
        #expect(Set(fannedOut) == [ChatAPI.messageTopic(userId: ann.id), ChatAPI.messageTopic(userId: bob.id)])
    }

    @Test("a file from before ServiceKit kept deleted users keeps its users marked deleted as ServiceKit's")
    func deletedUsersCarriedOver() throws {
        let queue = try DatabaseQueue()
        var migrator = DatabaseMigrator()
        ChatSchema.register(in: &migrator)
        try migrator.migrate(queue, upTo: "chat-1")
        try queue.write { db in
            try db.execute(sql: "INSERT INTO chat_user (user_id, deleted) VALUES ('gone', 1), ('here', 0)")
        }
        try migrator.migrate(queue)
        #expect(try queue.read { db in try String.fetchAll(db, sql: "SELECT user_id FROM deleted_user") } == ["gone"])
    }

    @Test("a file from before messages were their own push outbox: its messages are not pushed again, its queued pushes stay queued")
    func pushCursorCarriedOver() throws {
        let queue = try DatabaseQueue()
        var migrator = DatabaseMigrator()
        ChatSchema.register(in: &migrator)
        try migrator.migrate(queue, upTo: "chat-3")
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO conversation (id, user_a, user_b, last_seq, activity) VALUES ('c1', 'a', 'b', 1, 7);
                INSERT INTO message (conversation_id, seq, id, sender_id, text, sent_at) VALUES ('c1', 1, 'm1', 'a', 'hi', 0);
                INSERT INTO device (id, user_id, session_id, platform, address, registered_at) VALUES ('d1', 'b', 's', 'apns', 'ab', 0);
                INSERT INTO push_outbox (device_id, sender_id, conversation_id, notification, created_at, due_at)
                VALUES ('d1', 'a', 'c1', '{"title":"A","body":"hi"}', 0, 0);
                """)
        }
        try migrator.migrate(queue)
        let (cursor, waiting, unmarked) = try queue.read { db in
            (try Int64.fetchOne(db, sql: "SELECT activity FROM push_cursor"), try Int.fetchOne(db, sql: "SELECT count(*) FROM push_outbox"),
             try Bool.fetchOne(db, sql: "SELECT activity IS NULL AND badge IS NULL FROM message"))
        }
        #expect(cursor == 7, "the messages there were count as pushed")
        #expect(waiting == 1, "a push waiting stays, to be tried as a retry")
        #expect(unmarked == true)
    }
}
