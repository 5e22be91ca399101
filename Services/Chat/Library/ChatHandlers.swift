import Contracts
import Foundation
import ServiceKit
import Wire

/// Chat's handlers: each checks its request, asks the store, and announces new
/// messages after their commit.
struct ChatHandlers: Sendable {
    let store: ChatStore
    let events: EventChannel
    let pushSettings: PushSettings
    let vapidPublicKey: String
    /// Which of these sessions ended, as auth says (`auth.sessions.ended`).
    let endedSessions: @Sendable ([String]) throws -> [String]
    /// Wakes the push sender: a message to be pushed was committed.
    let wakePushes: @Sendable () -> Void
    /// A conversations page's cursor: the activity of the last one shown.
    private static let cursor = SeqCursor(tag: "c")

    func register(into router: inout Router) {
        router.write(ChatAPI.send, rateLimited: true, send)
        router.read(ChatAPI.conversations, conversations)
        router.read(ChatAPI.messages, messages)
        router.write(ChatAPI.read, read)
        router.write(ChatAPI.block, block)
        router.write(ChatAPI.unblock, unblock)
        registerDevices(into: &router)
    }

    func send(_ request: SendMessageRequest, _ context: RequestContext) throws -> Committed<MessageReply> {
        let sender = try context.requireCaller().userID
        let recipient: ChatStore.Recipient = request.to.map { .user($0) } ?? .conversation(request.conversationId ?? "")
        let id = Identifier.sortable(), now = Date()
        return try context.commit { db in
            let sent = try store.send(request.text, from: sender, to: recipient, id: id, at: now, in: db)
            // Registered last, once nothing in this savepoint can fail.
            db.afterNextTransaction { _ in
                for member in sent.members {
                    events.publish(topic: ChatAPI.messageTopic(userId: member), sent.message)
                }
                if sent.pushes { wakePushes() }
            }
            return MessageReply(message: sent.message)
        }
    }

    func conversations(_ request: ConversationsRequest, _ context: RequestContext) throws -> ConversationsReply {
        let userId = try context.requireCaller().userID
        let before = try request.cursor.map(Self.cursor.decode)
        let page = try store.conversations(of: userId, limit: request.limit ?? 20, before: before)
        return ConversationsReply(conversations: page.conversations, nextCursor: page.nextBefore.map(Self.cursor.encode))
    }

    func messages(_ request: MessagesRequest, _ context: RequestContext) throws -> MessagesReply {
        let userId = try context.requireCaller().userID
        return MessagesReply(messages: try store.messages(in: request.conversationId, for: userId, before: request.before,
                                                          after: request.after,
                                                          limit: request.limit ?? ChatRules.messagesDefaultLimit))
    }

    func read(_ request: ReadMarkRequest, _ context: RequestContext) throws -> Committed<UnreadReply> {
        let userId = try context.requireCaller().userID
        return try context.commit { db in
            UnreadReply(unread: try store.markRead(request.conversationId, upTo: request.seq, for: userId, in: db))
        }
    }

    func block(_ request: BlockRequest, _ context: RequestContext) throws -> Committed<Empty> {
        let userId = try context.requireCaller().userID
        return try context.commit { db in
            try store.block(request.userId, by: userId, in: db)
            return Empty()
        }
    }

    func unblock(_ request: BlockRequest, _ context: RequestContext) throws -> Committed<Empty> {
        let userId = try context.requireCaller().userID
        return try context.commit { db in
            try store.unblock(request.userId, by: userId, in: db)
            return Empty()
        }
    }
}
