import Foundation
import Wire

/// The chat service's ops: one conversation per pair of users.
public enum ChatAPI {
    public static let service = "chat"

    public static let send = Op<SendMessageRequest, MessageReply>("chat.send", access: .registered, effect: .write)
    public static let conversations = Op<ConversationsRequest, ConversationsReply>("chat.conversations", access: .user, effect: .read)
    public static let messages = Op<MessagesRequest, MessagesReply>("chat.messages", access: .user, effect: .read)
    public static let read = Op<ReadMarkRequest, UnreadReply>("chat.read", access: .user, effect: .write)
    public static let block = Op<BlockRequest, Empty>("chat.block", access: .user, effect: .write)
    public static let unblock = Op<BlockRequest, Empty>("chat.unblock", access: .user, effect: .write)
    public static let health = HealthAPI.health(service)

    /// The PUB topic of one user's new messages (body: `ChatMessage`).
    public static func messageTopic(userId: String) -> String { messageTopicPrefix + userId + "/" }
    public static let messageTopicPrefix = "chat.message/"
}

public struct ChatMessage: Codable, Sendable, Equatable {
    public var id: String
    public var conversationId: String
    /// 1, 2, 3 … within the conversation.
    public var seq: Int64
    public var senderId: String
    public var text: String
    public var sentAt: Date

    public init(id: String, conversationId: String, seq: Int64, senderId: String, text: String, sentAt: Date) {
        self.id = id
        self.conversationId = conversationId
        self.seq = seq
        self.senderId = senderId
        self.text = text
        self.sentAt = sentAt
    }
}

/// `chat.send`: to a user (the pair's conversation, made if new) or into a conversation.
public struct SendMessageRequest: ValidatedBody, Equatable {
    public var to: String?
    public var conversationId: String?
    public var text: String

    public init(to: String? = nil, conversationId: String? = nil, text: String) {
        self.to = to
        self.conversationId = conversationId
        self.text = text
    }

    public func validate() throws {
        switch (to, conversationId) {
        case (let to?, nil): try Check.entityID(to, field: "to")
        case (nil, let conversation?): try Check.entityID(conversation, field: "conversationId")
        case (nil, nil): throw ServiceError.invalidArgument(field: "to", "to (a user id) or conversationId is required")
        case (_?, _?): throw ServiceError.invalidArgument(field: "conversationId", "give either to or conversationId, not both")
        }
        try Check.length(text, field: "text", in: ChatRules.text)
    }
}

public struct MessageReply: Codable, Sendable, Equatable {
    public var message: ChatMessage
    public init(message: ChatMessage) { self.message = message }
}

/// `chat.conversations`: a page of the caller's conversations.
public typealias ConversationsRequest = PageRequest

public struct Conversation: Codable, Sendable, Equatable {
    public var id: String
    /// The other members.
    public var peerIds: [String]
    /// Those of `peerIds` whose accounts are deleted.
    public var deletedPeerIds: [String]
    public var lastMessage: ChatMessage?
    /// Messages from the others after the caller's read mark.
    public var unread: Int
    /// Whether the caller muted its pushes (`chat.mute`).
    public var muted: Bool

    public init(id: String, peerIds: [String], deletedPeerIds: [String], lastMessage: ChatMessage?, unread: Int,
                muted: Bool = false) {
        self.id = id
        self.peerIds = peerIds
        self.deletedPeerIds = deletedPeerIds
        self.lastMessage = lastMessage
        self.unread = unread
        self.muted = muted
    }

    enum CodingKeys: String, CodingKey { case id, peerIds, deletedPeerIds, lastMessage, unread, muted }

    /// `muted` is absent from services older than it: not muted.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        peerIds = try container.decode([String].self, forKey: .peerIds)
        deletedPeerIds = try container.decode([String].self, forKey: .deletedPeerIds)
        lastMessage = try container.decodeIfPresent(ChatMessage.self, forKey: .lastMessage)
        unread = try container.decode(Int.self, forKey: .unread)
        muted = try container.decodeIfPresent(Bool.self, forKey: .muted) ?? false
    }
}

public struct ConversationsReply: Codable, Sendable, Equatable {
    /// Latest activity first.
    public var conversations: [Conversation]
    public var nextCursor: String?

    public init(conversations: [Conversation], nextCursor: String?) {
        self.conversations = conversations
        self.nextCursor = nextCursor
    }
}

/// `chat.messages`: `before` S gives the messages just before seq S, `after` S those
/// just after; neither, the latest. Always in seq order.
public struct MessagesRequest: ValidatedBody, Equatable {
    public var conversationId: String
    public var before: Int64?
    public var after: Int64?
    public var limit: Int?

    public init(conversationId: String, before: Int64? = nil, after: Int64? = nil, limit: Int? = nil) {
        self.conversationId = conversationId
        self.before = before
        self.after = after
        self.limit = limit
    }

    public func validate() throws {
        try Check.entityID(conversationId, field: "conversationId")
        if before != nil, after != nil {
            throw ServiceError.invalidArgument(field: "after", "give before or after, not both")
        }
        if let before { try Check.range(before, field: "before", in: 0...Int64.max) }
        if let after { try Check.range(after, field: "after", in: 0...Int64.max) }
        _ = try Check.limit(limit, default: ChatRules.messagesDefaultLimit)
    }
}

public struct MessagesReply: Codable, Sendable, Equatable {
    public var messages: [ChatMessage]
    public init(messages: [ChatMessage]) { self.messages = messages }
}

/// `chat.read`: the caller has read up to `seq`.
public struct ReadMarkRequest: ValidatedBody, Equatable {
    public var conversationId: String
    public var seq: Int64

    public init(conversationId: String, seq: Int64) {
        self.conversationId = conversationId
        self.seq = seq
    }

    public func validate() throws {
        try Check.entityID(conversationId, field: "conversationId")
        try Check.range(seq, field: "seq", in: 0...Int64.max)
    }
}

public struct UnreadReply: Codable, Sendable, Equatable {
    public var unread: Int
    public init(unread: Int) { self.unread = unread }
}

public struct BlockRequest: ValidatedBody, Equatable {
    public var userId: String
    public init(userId: String) { self.userId = userId }
    public func validate() throws { try Check.entityID(userId, field: "userId") }
}
