import Foundation

extension Hereabouts {
    /// Sends a message to a user (their conversation with the signed-in user is made
    /// on the first one).
    @discardableResult
    public func sendMessage(_ text: String, to userId: String) async throws -> Message {
        try await send { try await $0.sendMessage(body: .json(.init(text: text, to: userId))).created.body.json.message }
    }

    @discardableResult
    public func sendMessage(_ text: String, inConversation conversationId: String) async throws -> Message {
        try await send { try await $0.sendMessage(body: .json(.init(conversationId: conversationId, text: text))).created.body.json.message }
    }

    /// The user's conversations, the most recently active first.
    public func conversations(pageSize: Int? = nil) -> Pages<Conversation> {
        Pages { cursor in
            let reply = try await self.send { try await $0.listConversations(query: .init(limit: pageSize, cursor: cursor)).ok.body.json }
            return Page(items: reply.conversations, nextCursor: reply.nextCursor)
        }
    }

    /// A conversation's messages after `seq` (all of them from 0), oldest first: what
    /// an app fetches on opening a chat, and after its events stream reconnects.
    public func messages(in conversationId: String, after seq: Int = 0, pageSize: Int? = nil) -> Pages<Message> {
        Pages { cursor in
            let after = cursor.flatMap(Int.init) ?? seq
            let messages = try await self.send {
                try await $0.listMessages(path: .init(id: conversationId), query: .init(after: after, limit: pageSize)).ok.body.json.messages
            }
            // The next page starts after the last message; an empty page is the end.
            return Page(items: messages, nextCursor: messages.last.map { String($0.seq) })
        }
    }

    /// Marks a conversation read up to message `seq`.
    public func markRead(_ conversationId: String, upTo seq: Int) async throws {
        _ = try await send { try await $0.markRead(path: .init(id: conversationId), body: .json(.init(seq: seq))).ok }
    }
}
