import Contracts
import Foundation
import GRDB
import Push
import ServiceKit
import Wire

/// The push outbox: rows written in a message's transaction, read and cleared by `PushSender`.
extension ChatStore {
    /// One push waiting, with the device it goes to.
    struct QueuedPush: Sendable {
        var id: Int64
        var notification: PushNotification
        var createdAt: Date
        var attempts: Int
        var deviceId: String
        var platform: DevicePlatform
        var address: String
        var environment: String?
        var topic: String?
        var p256dh: Data?
        var authSecret: Data?
        var lang: String?
        var session: String
    }

    /// Queues the push of a new message to each of the recipient's devices, unless the
    /// recipient muted the conversation. The alert's title is the sender's name (empty
    /// when auth's feed gave none: the sender words it in the device's language); the
    /// badge is everything the recipient has unread.
    ///
    /// One statement, on the send's transaction (which every send waits for): the
    /// notification is `PushNotification`'s JSON as SQLite's `json_object` writes it,
    /// with the name and the unread total read where they are, and a recipient without
    /// devices costs one look-up in the device index.
    func enqueuePushes(of message: ChatMessage, to recipient: String, at instant: Date, in db: Database) throws {
        try db.cachedStatement(sql: """
            INSERT INTO push_outbox (device_id, sender_id, conversation_id, notification, created_at, due_at)
            SELECT device.id, :sender, :conversation,
                   json_object('title', coalesce((SELECT display_name FROM chat_user WHERE user_id = :sender), ''),
                               'body', :body,
                               'badge', (SELECT coalesce(sum(unread), 0) FROM member WHERE user_id = :recipient),
                               'threadId', :conversation, 'collapseId', :message,
                               'data', json_object('conversationId', :conversation, 'messageId', :message, 'senderId', :sender)),
                   :at, :at
            FROM device
            WHERE device.user_id = :recipient
              AND NOT EXISTS (SELECT 1 FROM member WHERE user_id = :recipient AND conversation_id = :conversation AND muted = 1)
            """).execute(arguments: [
                "sender": message.senderId, "conversation": message.conversationId, "message": message.id, "recipient": recipient,
                "body": PushNotification.excerpt(message.text, limit: DeviceRules.excerpt), "at": instant.timeIntervalSince1970,
            ])
    }

    /// Drops the pushes still waiting from `sender` to `recipient`'s devices (a block).
    func dropPushes(from sender: String, to recipient: String, in db: Database) throws {
        try db.cachedStatement(sql: """
            DELETE FROM push_outbox WHERE sender_id = ? AND device_id IN (SELECT id FROM device WHERE user_id = ?)
            """).execute(arguments: [sender, recipient])
    }

    // MARK: The sender's side

    func duePushes(now: Date, limit: Int) throws -> [QueuedPush] {
        try database.pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT o.id, o.notification, o.created_at, o.attempts, d.id, d.platform, d.address, d.environment, d.topic,
                       d.p256dh, d.auth_secret, d.lang, d.session_id
                FROM push_outbox o JOIN device d ON d.id = o.device_id
                WHERE o.due_at <= ? ORDER BY o.due_at, o.id LIMIT ?
                """), arguments: [now.timeIntervalSince1970, limit]).compactMap { row in
                // Wire's decoder: Foundation's took a tenth of the push thread's time.
                guard let notification = try? JSONValueDecoder().decode(PushNotification.self, from: Data((row[1] as String).utf8)),
                      let platform = DevicePlatform(rawValue: row[5]) else { return nil }
                return QueuedPush(id: row[0], notification: notification, createdAt: Date(timeIntervalSince1970: row[2]),
                                  attempts: row[3], deviceId: row[4], platform: platform, address: row[6], environment: row[7],
                                  topic: row[8], p256dh: row[9], authSecret: row[10], lang: row[11], session: row[12])
            }
        }
    }

    /// What a pass of the sender learned, written in one transaction.
    struct PushOutcomes {
        /// Delivered, or given up: their rows go.
        var finished: [Int64] = []
        /// Pushes to try again, when, and why.
        var retries: [(id: Int64, at: Date, error: String)] = []
        /// Devices their push service no longer knows: they go with their pushes.
        var goneDevices: [String] = []
    }

    func record(_ outcomes: PushOutcomes) throws {
        try database.pool.write { db in
            // One statement for the pass's finished rows: the writer is what every send waits for.
            if !outcomes.finished.isEmpty {
                let ids = "[" + outcomes.finished.map(String.init).joined(separator: ",") + "]"
                try db.cachedStatement(sql: "DELETE FROM push_outbox WHERE id IN (SELECT value FROM json_each(?))").execute(arguments: [ids])
            }
            for retry in outcomes.retries {
                try db.cachedStatement(sql: "UPDATE push_outbox SET due_at = ?, attempts = attempts + 1, last_error = ? WHERE id = ?")
                    .execute(arguments: [retry.at.timeIntervalSince1970, retry.error, retry.id])
            }
            for device in outcomes.goneDevices {
                try db.cachedStatement(sql: "DELETE FROM device WHERE id = ?").execute(arguments: [device])
            }
        }
    }

    /// Pushes waiting, how long the oldest has, and when the next (one waiting for a retry) is due.
    func pushQueue(now: Date) throws -> (pending: Int, oldest: Double?, nextDue: Date?) {
        try database.pool.read { db in
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT count(*), min(created_at), min(due_at) FROM push_outbox"))
            let oldest: Double? = row?[1], due: Double? = row?[2]
            return (row?[0] ?? 0, oldest.map { max(0, now.timeIntervalSince1970 - $0) }, due.map(Date.init(timeIntervalSince1970:)))
        }
    }

    // MARK: The VAPID key

    /// The server's VAPID private key (raw P-256 scalar), made on the first start and kept in this file.
    func vapidPrivateKey(make: () -> Data) throws -> Data {
        try database.pool.write { db in
            if let key = try Data.fetchOne(db, sql: "SELECT private_key FROM push_key WHERE id = 1") { return key }
            let key = make()
            try db.execute(sql: "INSERT INTO push_key (id, private_key, created_at) VALUES (1, ?, ?)",
                           arguments: [key, Date().timeIntervalSince1970])
            return key
        }
    }
}
