import Foundation
import Wire

/// What a push shows on a device: an alert with a title and a body, the app's badge,
/// and the thread it belongs to. The same notification goes to APNs and to Web Push;
/// each transport lays it out as its receivers expect.
public struct PushNotification: Codable, Sendable, Equatable {
    public var title: String
    public var body: String
    /// The number on the app's icon; nil leaves it as it is.
    public var badge: Int?
    /// Notifications of one thread are grouped (APNs `thread-id`; the Web Push `tag`).
    public var threadId: String?
    /// A device shows one notification per collapse id, however often it arrives
    /// (`apns-collapse-id`, the Web Push `Topic`).
    public var collapseId: String?
    /// Keys the app reads when the notification is opened (`conversationId`, `messageId`).
    public var data: [String: String]

    public init(title: String, body: String, badge: Int? = nil, threadId: String? = nil, collapseId: String? = nil,
                data: [String: String] = [:]) {
        self.title = title
        self.body = body
        self.badge = badge
        self.threadId = threadId
        self.collapseId = collapseId
        self.data = data
    }

    /// `text` cut to at most `limit` characters at a character boundary, with `…` when cut.
    public static func excerpt(_ text: String, limit: Int = 120) -> String {
        guard text.count > limit else { return text }
        return String(text.prefix(max(0, limit - 1))) + "…"
    }
}

extension PushNotification {
    /// `data` as a JSON object, for the payloads (written with sorted keys, so the same bytes each time).
    var dataObject: JSONObject {
        JSONObject(data.map { (key: $0.key, value: .string($0.value)) })
    }
}

/// How one try to deliver a push ended, as the sender acts on it.
public enum PushOutcome: Sendable, Equatable {
    /// The push service took it.
    case delivered
    /// The device or subscription no longer exists (APNs 410 or `BadDeviceToken`, Web
    /// Push 404/410): forget it.
    case gone(String)
    /// Refused for now (429, 5xx, no connection): try again, not before `after` when the
    /// service said when.
    case retry(String, after: TimeInterval?)
    /// Refused for good for another reason (a wrong topic, a payload too large): give up
    /// this push, keep the device.
    case failed(String)
}
