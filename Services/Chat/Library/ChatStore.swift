import Contracts
import Foundation
import GRDB
import ServiceKit
import Wire

/// All of chat's SQL.
struct ChatStore: Sendable {
    let database: ServiceDatabase

    // MARK: Following auth

    /// Applies a batch of `auth.changes`.
    func apply(_ changes: [UserChange], in db: Database) throws {
        for change in changes {
            switch change.type {
            case .updated:
                // The name a push's alert shows: the display name, else the username.
                let name = change.user.flatMap { $0.profile.displayName ?? $0.profile.username }
                try db.cachedStatement(sql: """
                    INSERT INTO chat_user (user_id, display_name) VALUES (?, ?)
                    ON CONFLICT (user_id) DO UPDATE SET display_name = excluded.display_name
                    """).execute(arguments: [change.userId, name])
            case .deleted:
                try db.cachedStatement(sql: """
                    INSERT INTO chat_user (user_id, deleted) VALUES (?, 1)
                    ON CONFLICT (user_id) DO UPDATE SET deleted = 1
                    """).execute(arguments: [change.userId])
                // A deleted account's devices go, and the pushes waiting for them.
                try db.cachedStatement(sql: "DELETE FROM device WHERE user_id = ?").execute(arguments: [change.userId])
            }
        }
    }

    /// The users chat knows and has not seen deleted, for the end of a replay of auth's feed.
    func heldUserIds(in db: Database) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT user_id FROM chat_user WHERE deleted = 0")
    }


    // MARK: Sending

    enum Recipient {
        case user(String)
        case conversation(String)
    }

    /// A sent message, who gets it, and whether it is to be pushed.
    struct Sent {
        var message: ChatMessage
        var members: [String]
        var pushes: Bool
    }

    func send(_ text: String, from sender: String, to recipient: Recipient, id: String, at instant: Date,
              in db: Database) throws -> Sent {
        let (conversationId, peer) = try resolve(recipient, sender: sender, in: db)
        let blocked = try Bool.fetchOne(
            db.cachedStatement(sql: "SELECT 1 FROM block WHERE blocker_id = ? AND blocked_id = ?"), arguments: [peer, sender]) ?? false
        guard !blocked else { throw ServiceError.permissionDenied("\(peer) does not take messages from you") }
        let conversation = try conversationId ?? create(between: sender, and: peer, in: db)
        // The next seq of the conversation and the next activity of all, in one step.
        let next = try db.cachedStatement(sql: """
            UPDATE conversation SET last_seq = last_seq + 1, activity = (SELECT max(activity) FROM conversation) + 1
            WHERE id = ? RETURNING last_seq, activity
            """)
        let position = try Row.fetchOne(next, arguments: [conversation])
        let seq: Int64 = position?[0] ?? 1, activity: Int64 = position?[1] ?? 1
        try db.cachedStatement(sql: "UPDATE member SET unread = unread + 1 WHERE conversation_id = ? AND user_id = ?")
            .execute(arguments: [conversation, peer])
        // The message is its own push outbox entry (ChatStore+Push.swift): its activity
        // orders it among all messages, its badge (NULL: nothing to push) is the recipient's
        // unread total with this message.
        let insert = try db.cachedStatement(sql: """
            INSERT INTO message (conversation_id, seq, id, sender_id, text, sent_at, activity, badge)
            VALUES (:conversation, :seq, :id, :sender, :text, :at, :activity, \(Self.pushBadgeSQL))
            RETURNING badge
            """)
        // The badge itself, tested here: SQLite 3.40's `RETURNING badge IS NOT NULL` answers 1 for a NULL badge.
        let inserted = try Row.fetchOne(insert, arguments: [
            "conversation": conversation, "seq": seq, "id": id, "sender": sender, "text": text, "at": instant.timeIntervalSince1970,
            "activity": activity, "recipient": peer,
        ])
        let pushes = (inserted?[0] as Int?) != nil
        let message = ChatMessage(id: id, conversationId: conversation, seq: seq, senderId: sender, text: text, sentAt: instant)
        return Sent(message: message, members: [sender, peer], pushes: pushes)
    }

    /// The conversation (nil when the pair has none yet) and the other member, who
    /// must have an account that is not deleted.
    private func resolve(_ recipient: Recipient, sender: String, in db: Database) throws -> (String?, String) {
        let conversation: String?, peer: String, field: String
        switch recipient {
        case .user(let user):
            guard user != sender else { throw ServiceError.invalidArgument(field: "to", "you cannot send a message to yourself") }
            let (a, b) = Self.pair(sender, user)
            let existing = try db.cachedStatement(sql: "SELECT id FROM conversation WHERE user_a = ? AND user_b = ?")
            (conversation, peer, field) = (try String.fetchOne(existing, arguments: [a, b]), user, "to")
        case .conversation(let id):
            (conversation, peer, field) = (id, try requireMember(sender, of: id, in: db).peer, "conversationId")
        }
        switch try isKnown(peer, in: db) {
        case .active?: return (conversation, peer)
        case .deleted?: throw ServiceError(code: .notFound, message: "user \(peer) has deleted their account", field: field)
        case nil: throw ServiceError(code: .notFound, message: "no user \(peer)", field: field)
        }
    }

    private func create(between one: String, and other: String, in db: Database) throws -> String {
        let id = Identifier.sortable()
        let (a, b) = Self.pair(one, other)
        try db.cachedStatement(sql: "INSERT INTO conversation (id, user_a, user_b, activity) VALUES (?, ?, ?, 0)")
            .execute(arguments: [id, a, b])
        try db.cachedStatement(sql: "INSERT INTO member (user_id, conversation_id) VALUES (?, ?), (?, ?)")
            .execute(arguments: [one, id, other, id])
        return id
    }

    private static func pair(_ one: String, _ other: String) -> (String, String) {
        one.utf8.lexicographicallyPrecedes(other.utf8) ? (one, other) : (other, one)
    }

    private enum Known { case active, deleted }

    private func isKnown(_ userId: String, in db: Database) throws -> Known? {
        let known = try db.cachedStatement(sql: "SELECT deleted FROM chat_user WHERE user_id = ?")
        return try Bool.fetchOne(known, arguments: [userId]).map { $0 ? .deleted : .active }
    }

    /// The caller's read mark and the other member; `not_found` for no such
    /// conversation, `permission_denied` for one the caller is not in.
    func requireMember(_ userId: String, of conversation: String, in db: Database) throws -> (readSeq: Int64, peer: String) {
        let pair = try db.cachedStatement(sql: "SELECT user_a, user_b FROM conversation WHERE id = ?")
        guard let row = try Row.fetchOne(pair, arguments: [conversation]) else {
            throw ServiceError(code: .notFound, message: "no conversation \(conversation)", field: "conversationId")
        }
        let a: String = row[0], b: String = row[1]
        guard userId == a || userId == b,
              let readSeq = try Int64.fetchOne(
                  db.cachedStatement(sql: "SELECT read_seq FROM member WHERE user_id = ? AND conversation_id = ?"),
                                               arguments: [userId, conversation]) else {
            throw ServiceError.permissionDenied("you are not a member of conversation \(conversation)")
        }
        return (readSeq, userId == a ? b : a)
    }

    // MARK: Reading

    struct ConversationPage {
        var conversations: [Conversation]
        /// The activity of the last one, when more follow.
        var nextBefore: Int64?
    }

    /// The user's conversations, latest activity first, those older than `before` when given.
    func conversations(of userId: String, limit: Int, before: Int64?) throws -> ConversationPage {
        try database.pool.read { db in
            let rows = try Row.fetchAll(db.cachedStatement(sql: """
                SELECT c.id, c.user_a, c.user_b, c.last_seq, c.activity, m.unread, m.muted
                FROM member m JOIN conversation c ON c.id = m.conversation_id
                WHERE m.user_id = ? AND c.activity < ? AND c.last_seq > 0
                ORDER BY c.activity DESC LIMIT ?
                """), arguments: [userId, before ?? .max, limit + 1])
            var conversations: [Conversation] = []
            for row in rows.prefix(limit) {
                let id: String = row[0], a: String = row[1], b: String = row[2], lastSeq: Int64 = row[3], unread: Int = row[5]
                let peer = userId == a ? b : a
                let deleted = try isKnown(peer, in: db) == .deleted
                conversations.append(Conversation(
                    id: id, peerIds: [peer], deletedPeerIds: deleted ? [peer] : [],
                    lastMessage: try messages(in: id, where: "seq = ?", [lastSeq], descending: false, limit: 1, in: db).first,
                    unread: unread, muted: row[6]))
            }
            let next: Int64? = rows.count > limit ? rows[limit - 1][4] : nil
            return ConversationPage(conversations: conversations, nextBefore: next)
        }
    }

    /// A page of a conversation the user is in, in seq order.
    func messages(in conversation: String, for userId: String, before: Int64?, after: Int64?, limit: Int) throws -> [ChatMessage] {
        try database.pool.read { db in
            _ = try requireMember(userId, of: conversation, in: db)
            if let after {
                return try messages(in: conversation, where: "seq > ?", [after], descending: false, limit: limit, in: db)
            }
            let latest = try messages(in: conversation, where: "seq < ?", [before ?? .max], descending: true, limit: limit, in: db)
            return latest.reversed()
        }
    }

    private func messages(in conversation: String, where condition: String, _ arguments: [Int64], descending: Bool, limit: Int,
                          in db: Database) throws -> [ChatMessage] {
        let order = descending ? "DESC" : "ASC"
        return try Row.fetchAll(db.cachedStatement(sql: """
            SELECT id, seq, sender_id, text, sent_at FROM message
            WHERE conversation_id = ? AND \(condition) ORDER BY seq \(order) LIMIT ?
            """), arguments: StatementArguments([conversation] + arguments.map { $0 as any DatabaseValueConvertible } + [limit])
        ).map { row in
            ChatMessage(id: row[0], conversationId: conversation, seq: row[1], senderId: row[2], text: row[3],
                        sentAt: Date(timeIntervalSince1970: row[4]))
        }
    }

    private func unread(in conversation: String, for userId: String, after readSeq: Int64, in db: Database) throws -> Int {
        try Int.fetchOne(
            db.cachedStatement(sql: "SELECT count(*) FROM message WHERE conversation_id = ? AND seq > ? AND sender_id != ?"),
                         arguments: [conversation, readSeq, userId]) ?? 0
    }

    /// Moves the user's read mark forward to `seq` (never back, never past the last
    /// message); returns what is still unread.
    func markRead(_ conversation: String, upTo seq: Int64, for userId: String, in db: Database) throws -> Int {
        let member = try requireMember(userId, of: conversation, in: db)
        let lastSeq = try db.cachedStatement(sql: "SELECT last_seq FROM conversation WHERE id = ?")
        let last = try Int64.fetchOne(lastSeq, arguments: [conversation]) ?? 0
        let mark = max(member.readSeq, min(seq, last))
        let unread = try unread(in: conversation, for: userId, after: mark, in: db)
        let statement = try db.cachedStatement(sql: "UPDATE member SET read_seq = ?, unread = ? WHERE user_id = ? AND conversation_id = ?")
        try statement.execute(arguments: [mark, unread, userId, conversation])
        return unread
    }

    // MARK: Blocks

    func block(_ blocked: String, by blocker: String, in db: Database) throws {
        guard blocked != blocker else { throw ServiceError.invalidArgument(field: "userId", "you cannot block yourself") }
        guard try isKnown(blocked, in: db) != nil else {
            throw ServiceError(code: .notFound, message: "no user \(blocked)", field: "userId")
        }
        try db.cachedStatement(sql: "INSERT OR IGNORE INTO block (blocker_id, blocked_id) VALUES (?, ?)")
            .execute(arguments: [blocker, blocked])
        // Nothing from the blocked user reaches the blocker's devices after this, queued or not.
        try dropPushes(from: blocked, to: blocker, in: db)
    }

    func unblock(_ blocked: String, by blocker: String, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM block WHERE blocker_id = ? AND blocked_id = ?").execute(arguments: [blocker, blocked])
    }
}
