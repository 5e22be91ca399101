import Contracts
import Foundation
import GRDB
import Push
import ServiceKit
import Wire

/// Chat's pushes: a message is its own outbox entry, and `push_outbox` holds the pushes
/// to be tried again. A message that is to be pushed carries the recipient's unread
/// total as it was committed (`message.badge`, NULL when there is nothing to push) and
/// its place in the order of all messages (`message.activity`, the value its
/// conversation's `activity` took); `push_cursor` is the activity up to which every
/// message has had its first try. The send's transaction thus writes no row but the
/// message, however many devices the recipient has (the sends wait on SQLite's one
/// writer), and nothing is deleted after delivery. `PushSender` finds new messages
/// through the conversations' activity index and records a pass's outcome with the
/// cursor in one transaction, so a crash loses no push and one delivered but not
/// recorded leaves again (once more, with the message's id as its collapse id).
extension ChatStore {
    /// One push waiting, with the device it goes to. `id` is its `push_outbox` row; nil
    /// for a first try (it has no row: its message is its entry).
    struct QueuedPush: Sendable {
        var id: Int64?
        var notification: PushNotification
        var createdAt: Date
        var attempts: Int
        var senderId: String
        var conversationId: String
        var target: PushTarget
        var deviceId: String { target.id }
        var session: String { target.session }
        var device: DeviceRegistration { target.device }
    }

    /// A device a push goes to: its row's id, the session that registered it, and what it
    /// was registered with.
    struct PushTarget: Sendable {
        var id: String
        var session: String
        var device: DeviceRegistration

        /// The device's columns from `first` on: id, session_id, platform, address,
        /// environment, topic, p256dh, auth_secret, lang. Nil for a platform not known.
        init?(_ row: Row, from first: Int) {
            guard let platform = DevicePlatform(rawValue: row[first + 2]) else { return nil }
            id = row[first]
            session = row[first + 1]
            device = DeviceRegistration(platform: platform, address: row[first + 3], environment: row[first + 4],
                                        topic: row[first + 5], p256dh: row[first + 6], authSecret: row[first + 7],
                                        lang: row[first + 8])
        }
    }

    /// What a pass takes: every first try since the cursor (their messages ordered as
    /// they were committed), the retries that are due (at most `retryLimit`), and the
    /// cursor to record once they are done.
    struct PushBatch: Sendable {
        var pushes: [QueuedPush] = []
        /// The newest activity this batch covers; nil when no message came since the cursor.
        var cursor: Int64?
        /// Whether more retries are due than were taken.
        var moreRetries = false
        /// Whether more messages wait for their first try than the batch took.
        var moreFirstTries = false
    }

    /// The badge a message sent now to `recipient` carries, as SQL for the message's
    /// insert: the recipient's unread total, or NULL (no push) when they have no device
    /// or muted the conversation. One look-up in the device index for most recipients.
    static let pushBadgeSQL = """
        CASE WHEN EXISTS (SELECT 1 FROM device WHERE user_id = :recipient)
              AND NOT EXISTS (SELECT 1 FROM member WHERE user_id = :recipient AND conversation_id = :conversation AND muted = 1)
        THEN (SELECT coalesce(sum(unread), 0) FROM member WHERE user_id = :recipient) END
        """

    /// Drops the pushes from `sender` to `recipient`'s devices waiting for a retry (a
    /// block; the first tries of messages not yet pushed look for blocks themselves).
    func dropPushes(from sender: String, to recipient: String, in db: Database) throws {
        try db.cachedStatement(sql: """
            DELETE FROM push_outbox WHERE sender_id = ? AND device_id IN (SELECT id FROM device WHERE user_id = ?)
            """).execute(arguments: [sender, recipient])
    }

    // MARK: The sender's side

    /// The retries due (at most `retryLimit`) and the first tries of the oldest
    /// `firstTryLimit` messages after the cursor that have something to push (so that a
    /// pass after a long stall of the sender holds a bounded number of pushes; the next
    /// takes the rest).
    func pendingPushes(now: Date, retryLimit: Int, firstTryLimit: Int) throws -> PushBatch {
        try database.pool.read { db in
            var batch = PushBatch()
            let retries = try dueRetries(now: now, limit: retryLimit, in: db)
            batch.moreRetries = retries.count == retryLimit
            batch.pushes = retries
            let cursor = try pushCursor(in: db)
            // Everything committed before this read is covered, pushed or not, up to the batch's
            // last message (its activity), or up to the newest when the batch took all there were.
            let (messages, more) = try oldestMessagesToPush(after: cursor, limit: firstTryLimit, in: db)
            let end: Int64
            if more, let last = messages.last {
                end = last.activity
            } else {
                end = try Int64.fetchOne(db.cachedStatement(sql: "SELECT max(activity) FROM conversation")) ?? 0
            }
            batch.cursor = end > cursor ? end : nil
            batch.moreFirstTries = more
            var names: [String: String] = [:]
            let devices = try devicesNow(for: messages, in: db)
            for (index, message) in messages.enumerated() {
                guard let targets = devices[index] else { continue }
                let title = try names[message.senderId] ?? {
                    let name = try String.fetchOne(db.cachedStatement(sql: "SELECT display_name FROM chat_user WHERE user_id = ?"),
                                                   arguments: [message.senderId]) ?? ""
                    names[message.senderId] = name
                    return name
                }()
                let notification = PushNotification(
                    title: title, body: PushNotification.excerpt(message.text, limit: DeviceRules.excerpt), badge: message.badge,
                    threadId: message.conversationId, collapseId: message.id,
                    data: ["conversationId": message.conversationId, "messageId": message.id, "senderId": message.senderId])
                for target in targets {
                    batch.pushes.append(QueuedPush(
                        id: nil, notification: notification, createdAt: message.sentAt, attempts: 0, senderId: message.senderId,
                        conversationId: message.conversationId, target: target))
                }
            }
            return batch
        }
    }

    /// The devices each message's pushes go to now, by the message's place in `messages`:
    /// the recipient's, unless they blocked the sender or muted the conversation since.
    /// One query for the batch (a pass of a dozen messages made a dozen before).
    private func devicesNow(for messages: [MessageToPush], in db: Database) throws -> [Int: [PushTarget]] {
        guard !messages.isEmpty else { return [:] }
        let list = JSONWriter.data(.array(messages.map { message in
            .array([.string(message.recipientId), .string(message.senderId), .string(message.conversationId)])
        }))
        var devices: [Int: [PushTarget]] = [:]
        let rows = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT m.key, d.id, d.session_id, d.platform, d.address, d.environment, d.topic, d.p256dh, d.auth_secret, d.lang
            FROM json_each(?) m JOIN device d ON d.user_id = m.value ->> 0
            WHERE NOT EXISTS (SELECT 1 FROM block WHERE blocker_id = d.user_id AND blocked_id = m.value ->> 1)
              AND NOT EXISTS (SELECT 1 FROM member WHERE user_id = d.user_id AND conversation_id = m.value ->> 2 AND muted = 1)
            ORDER BY m.key, d.registered_at, d.id
            """), arguments: [String(decoding: list, as: UTF8.self)])
        while let row = try rows.next() {
            guard let target = PushTarget(row, from: 1) else { continue }
            devices[row[0], default: []].append(target)
        }
        return devices
    }

    private func dueRetries(now: Date, limit: Int, in db: Database) throws -> [QueuedPush] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT o.id, o.notification, o.created_at, o.attempts, o.sender_id, o.conversation_id,
                   d.id, d.session_id, d.platform, d.address, d.environment, d.topic, d.p256dh, d.auth_secret, d.lang
            FROM push_outbox o JOIN device d ON d.id = o.device_id
            WHERE o.due_at <= ? ORDER BY o.due_at, o.id LIMIT ?
            """), arguments: [now.timeIntervalSince1970, limit]).compactMap { row in
            guard let notification = try? JSONValueDecoder().decode(PushNotification.self, from: Data((row[1] as String).utf8)),
                  let target = PushTarget(row, from: 6) else { return nil }
            return QueuedPush(id: row[0], notification: notification, createdAt: Date(timeIntervalSince1970: row[2]),
                              attempts: row[3], senderId: row[4], conversationId: row[5], target: target)
        }
    }

    /// A message committed after the push cursor, with something to push.
    struct MessageToPush {
        var id: String
        var conversationId: String
        var senderId: String
        var recipientId: String
        var text: String
        var sentAt: Date
        var activity: Int64
        var badge: Int
    }

    /// The oldest `limit` messages committed after `cursor` that have something to push,
    /// in the order they were committed, and whether more wait after them.
    ///
    /// Counted in messages to push, not in activity: a window of activity after a stream
    /// of messages to people with no device held nothing to push, and a sender that stepped
    /// through such windows read every conversation since the cursor again at each (one
    /// stuck at nice 19 for whole seconds after 20,000 of them, its pushes waiting).
    func oldestMessagesToPush(after cursor: Int64, limit: Int, in db: Database) throws -> (messages: [MessageToPush], more: Bool) {
        let limit = max(1, limit)
        var messages: [MessageToPush] = [], more = false
        func keepOldest() {
            guard messages.count > limit else { return }
            messages.sort { $0.activity < $1.activity }
            messages.removeLast(messages.count - limit)
            more = true
        }
        // The scan meets conversations in order of their newest message, not messages in
        // order: the oldest are kept as it goes, sorted each time twice the limit is held.
        try forEachMessageToPush(after: cursor, in: db) { message in
            messages.append(message)
            if messages.count >= 2 * limit { keepOldest() }
        }
        keepOldest()
        messages.sort { $0.activity < $1.activity }
        return (messages, more)
    }

    /// How many of each conversation's newest messages the first read of a pass takes.
    static let recentMessages = 4

    /// Each message committed after `cursor` that has something to push: the
    /// conversations whose activity passed the cursor (their index), and in each its
    /// messages from the newest back to the first at or before the cursor (those with
    /// nothing to push stepped over, their text not read).
    ///
    /// One query takes every such conversation's `recentMessages` newest messages (a
    /// conversation's seq runs 1…last_seq): most have one or two new ones. Only a
    /// conversation with more new messages than that is read further back on its own.
    func forEachMessageToPush(after cursor: Int64, in db: Database, _ body: (MessageToPush) throws -> Void) throws {
        struct Conversation {
            var userA: String, userB: String, lastSeq: Int64
            /// Whether a message at or before the cursor was met: none older is new.
            var reachedOld = false
        }
        let window = Int64(Self.recentMessages)
        var conversations: [String: Conversation] = [:]
        var order: [String] = []
        // The text only of the new ones to push: the window's others are only looked at.
        let recent = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT c.id, c.user_a, c.user_b, c.last_seq, m.seq, m.activity, m.badge, m.id, m.sender_id,
                   CASE WHEN m.activity > :cursor AND m.badge IS NOT NULL THEN m.text END, m.sent_at
            FROM conversation c LEFT JOIN message m ON m.conversation_id = c.id AND m.seq > c.last_seq - :window
            WHERE c.activity > :cursor
            ORDER BY c.activity, m.seq DESC
            """), arguments: ["cursor": cursor, "window": Self.recentMessages])
        while let row = try recent.next() {
            let id: String = row[0]
            let conversation = conversations[id] ?? {
                order.append(id)
                return Conversation(userA: row[1], userB: row[2], lastSeq: row[3])
            }()
            conversations[id] = conversation
            // No message in the window, or past the first old one (the rows come newest first).
            guard row[4] as Int64? != nil, !conversation.reachedOld else { continue }
            // A message at or before the cursor (or from before pushes were kept this way): the older ones are not new.
            guard let activity = row[5] as Int64?, activity > cursor else {
                conversations[id]?.reachedOld = true
                continue
            }
            try Self.take(row, from: 5, conversation: id, userA: conversation.userA, userB: conversation.userB, body)
        }
        let older = try db.cachedStatement(sql: """
            SELECT activity, badge, id, sender_id, CASE WHEN badge IS NOT NULL THEN text END, sent_at FROM message
            WHERE conversation_id = ? AND seq <= ? ORDER BY seq DESC
            """)
        // Those whose window held only new messages, and that have older ones.
        for id in order {
            guard let conversation = conversations[id], !conversation.reachedOld, conversation.lastSeq > window else { continue }
            let rows = try Row.fetchCursor(older, arguments: [id, conversation.lastSeq - window])
            while let row = try rows.next() {
                guard let activity = row[0] as Int64?, activity > cursor else { break }
                try Self.take(row, from: 0, conversation: id, userA: conversation.userA, userB: conversation.userB, body)
            }
        }
    }

    /// The message in `row` from column `first` on (activity, badge, id, sender, text,
    /// sent at), given to `body` when it has something to push.
    private static func take(_ row: Row, from first: Int, conversation id: String, userA: String, userB: String,
                             _ body: (MessageToPush) throws -> Void) throws {
        guard let activity = row[first] as Int64?, let badge = row[first + 1] as Int?, let text = row[first + 4] as String? else { return }
        let sender: String = row[first + 3]
        try body(MessageToPush(id: row[first + 2], conversationId: id, senderId: sender,
                               recipientId: sender == userA ? userB : userA, text: text,
                               sentAt: Date(timeIntervalSince1970: row[first + 5]), activity: activity, badge: badge))
    }

    private func pushCursor(in db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT activity FROM push_cursor WHERE id = 1")) ?? 0
    }

    /// What a pass of the sender learned, written in one transaction.
    struct PushOutcomes: Sendable {
        /// Retries delivered, or given up: their rows go.
        var finished: [Int64] = []
        /// Pushes to try again, when, and why (a first try gets a row).
        var retries: [(push: QueuedPush, at: Date, error: String)] = []
        /// Devices their push service no longer knows: they go with their pushes.
        var goneDevices: [String] = []
        /// Every message up to this activity has had its first try.
        var cursor: Int64?
    }

    func record(_ outcomes: PushOutcomes) throws {
        try database.pool.write { db in
            if let cursor = outcomes.cursor {
                try db.cachedStatement(sql: "UPDATE push_cursor SET activity = max(activity, ?) WHERE id = 1").execute(arguments: [cursor])
            }
            // One statement for the pass's finished retries: the writer is what every send waits for.
            if !outcomes.finished.isEmpty {
                try db.cachedStatement(sql: "DELETE FROM push_outbox WHERE id IN (SELECT value FROM json_each(?))")
                    .execute(arguments: [JSONList.argument(outcomes.finished)])
            }
            for retry in outcomes.retries {
                if let id = retry.push.id {
                    try db.cachedStatement(sql: "UPDATE push_outbox SET due_at = ?, attempts = attempts + 1, last_error = ? WHERE id = ?")
                        .execute(arguments: [retry.at.timeIntervalSince1970, retry.error, id])
                } else {
                    let notification = String(decoding: try JSONValueEncoder().encodeData(retry.push.notification), as: UTF8.self)
                    try db.cachedStatement(sql: """
                        INSERT INTO push_outbox (device_id, sender_id, conversation_id, notification, created_at, due_at, attempts, last_error)
                        VALUES (?, ?, ?, ?, ?, ?, 1, ?)
                        """).execute(arguments: [retry.push.deviceId, retry.push.senderId, retry.push.conversationId, notification,
                                                 retry.push.createdAt.timeIntervalSince1970, retry.at.timeIntervalSince1970, retry.error])
                }
            }
            for device in outcomes.goneDevices {
                try db.cachedStatement(sql: "DELETE FROM device WHERE id = ?").execute(arguments: [device])
            }
        }
    }

    /// The push queue as `pushQueue(now:)` finds it.
    struct PushQueue {
        /// Pushes waiting for a retry and messages waiting for their first try.
        var pending: Int
        /// Seconds the oldest of them has waited.
        var oldest: Double?
        /// Seconds the oldest message waiting for its first try has waited: how far the
        /// sender is behind (a retry waits by design).
        var oldestFirstTry: Double?
        /// When the next is due (now, when a message waits).
        var nextDue: Date?
    }

    /// Messages with nothing to push do not call for a pass: the next one moves the cursor past them.
    func pushQueue(now: Date) throws -> PushQueue {
        try database.pool.read { db in
            let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT count(*), min(created_at), min(due_at) FROM push_outbox"))
            var pending: Int = row?[0] ?? 0, oldest: Double? = row?[1], due: Double? = row?[2], oldestNew: Double?
            // Counted, not kept: after a stall of the sender they may be many.
            try forEachMessageToPush(after: try pushCursor(in: db), in: db) { message in
                due = now.timeIntervalSince1970
                pending += 1
                oldestNew = min(oldestNew ?? .infinity, message.sentAt.timeIntervalSince1970)
            }
            func age(_ time: Double?) -> Double? { time.map { max(0, now.timeIntervalSince1970 - $0) } }
            return PushQueue(pending: pending, oldest: age([oldest, oldestNew].compactMap { $0 }.min()),
                             oldestFirstTry: age(oldestNew), nextDue: due.map(Date.init(timeIntervalSince1970:)))
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
