import Contracts
import Foundation
import GRDB
import ServiceKit
import Wire

/// The devices that get a user's pushes, and muted conversations.
extension ChatStore {
    /// What a device is registered with, checked.
    struct DeviceRegistration: Sendable {
        var platform: DevicePlatform
        /// The APNs token (hex) or the Web Push endpoint.
        var address: String
        var environment: String?
        var topic: String?
        var p256dh: Data?
        var authSecret: Data?
        var lang: String?
    }

    /// Registers a device for `userId`'s session, or registers it again: a device
    /// another user had moves to this one (with none of their pushes). Beyond
    /// `DeviceRules.maxPerUser`, the user's least recently registered device is forgotten.
    func register(_ device: DeviceRegistration, for userId: String, session: String, at instant: Date, in db: Database) throws -> Device {
        let previousOwner = try String.fetchOne(
            db.cachedStatement(sql: "SELECT user_id FROM device WHERE platform = ? AND address = ?"),
            arguments: [device.platform.rawValue, device.address])
        let id = try String.fetchOne(db.cachedStatement(sql: """
            INSERT INTO device (id, user_id, session_id, platform, address, environment, topic, p256dh, auth_secret, lang, registered_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (platform, address) DO UPDATE SET
                user_id = excluded.user_id, session_id = excluded.session_id, environment = excluded.environment,
                topic = excluded.topic, p256dh = excluded.p256dh, auth_secret = excluded.auth_secret, lang = excluded.lang,
                registered_at = excluded.registered_at
            RETURNING id
            """), arguments: [Identifier.sortable(), userId, session, device.platform.rawValue, device.address, device.environment,
                              device.topic, device.p256dh, device.authSecret, device.lang, instant.timeIntervalSince1970]) ?? ""
        if let previousOwner, previousOwner != userId {
            try db.cachedStatement(sql: "DELETE FROM push_outbox WHERE device_id = ?").execute(arguments: [id])
        }
        try db.cachedStatement(sql: """
            DELETE FROM device WHERE id IN (
                SELECT id FROM device WHERE user_id = ? ORDER BY registered_at DESC, id DESC LIMIT -1 OFFSET ?)
            """).execute(arguments: [userId, DeviceRules.maxPerUser])
        return Device(id: id, platform: device.platform, token: device.platform == .apns ? device.address : nil,
                      environment: device.environment, topic: device.topic,
                      endpoint: device.platform == .webpush ? device.address : nil, lang: device.lang, registeredAt: instant)
    }

    /// The user's devices, most recently registered first, with the session each was registered by.
    func devices(of userId: String) throws -> [(device: Device, session: String)] {
        try database.pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: """
                SELECT id, platform, address, environment, topic, lang, registered_at, session_id FROM device
                WHERE user_id = ? ORDER BY registered_at DESC, id DESC
                """), arguments: [userId]).map { row in
                let platform = DevicePlatform(rawValue: row[1]) ?? .apns
                let address: String = row[2]
                return (Device(id: row[0], platform: platform, token: platform == .apns ? address : nil, environment: row[3],
                               topic: row[4], endpoint: platform == .webpush ? address : nil, lang: row[5],
                               registeredAt: Date(timeIntervalSince1970: row[6])), row[7])
            }
        }
    }

    /// Forgets one of the user's devices; `not_found` when the user has no such device.
    func deleteDevice(_ id: String, of userId: String, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM device WHERE id = ? AND user_id = ?").execute(arguments: [id, userId])
        guard db.changesCount > 0 else { throw ServiceError(code: .notFound, message: "no device \(id)", field: "deviceId") }
    }

    /// Forgets the devices registered by sessions that have ended; returns how many.
    @discardableResult
    func forgetDevices(ofSessions sessions: [String]) throws -> Int {
        guard !sessions.isEmpty else { return 0 }
        return try database.pool.write { db in
            try db.execute(sql: "DELETE FROM device WHERE session_id IN (SELECT value FROM json_each(?))",
                           arguments: [JSONList.argument(sessions)])
            return db.changesCount
        }
    }

    // MARK: Muting

    /// Mutes or unmutes a conversation's pushes for a member; muting drops its pushes still waiting.
    func setMuted(_ muted: Bool, conversation: String, for userId: String, in db: Database) throws {
        _ = try requireMember(userId, of: conversation, in: db)
        try db.cachedStatement(sql: "UPDATE member SET muted = ? WHERE user_id = ? AND conversation_id = ?")
            .execute(arguments: [muted, userId, conversation])
        if muted {
            try db.cachedStatement(sql: """
                DELETE FROM push_outbox WHERE conversation_id = ? AND device_id IN (SELECT id FROM device WHERE user_id = ?)
                """).execute(arguments: [conversation, userId])
        }
    }
}
