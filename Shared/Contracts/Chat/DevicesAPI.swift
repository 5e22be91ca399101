import Foundation
import Wire

/// Devices that get a user's pushes, muted conversations, and the server's Web Push key.
/// Chat owns them: it writes a message and the pushes it causes in one transaction.
extension ChatAPI {
    public static let devicesRegister = Op<DeviceRegisterRequest, DeviceReply>(
        "chat.devices.register", access: .user, effect: .write)
    public static let devices = Op<Empty, DevicesReply>("chat.devices", access: .user, effect: .read)
    public static let devicesDelete = Op<DeviceIdRequest, Empty>("chat.devices.delete", access: .user, effect: .write)
    public static let mute = Op<MuteRequest, MuteReply>("chat.mute", access: .user, effect: .write)
    public static let vapidKey = Op<Empty, VAPIDKeyReply>("chat.push.vapidKey", access: .anyone, effect: .read)
}

public enum DevicePlatform: String, Codable, Sendable, CaseIterable {
    /// An Apple device, through the Apple Push Notification service.
    case apns
    /// A browser, through its push service (RFC 8030).
    case webpush
}

public enum DeviceRules {
    /// Devices one user may have; registering another forgets the one least recently registered.
    public static let maxPerUser = 10
    /// APNs device tokens are 32 bytes today; Apple says they may grow.
    public static let apnsTokenHex = 32...400
    public static let topic = 1...255
    public static let endpoint = 12...2_048
    /// Characters of a message a push shows.
    public static let excerpt = 120
}

/// `chat.devices.register`: an APNs device token or a browser's push subscription.
public struct DeviceRegisterRequest: ValidatedBody, Equatable {
    public var platform: DevicePlatform
    /// APNs: the device token in hex, as `UIApplication` hands it over (as Data) written out.
    public var token: String?
    /// APNs: `sandbox` for development builds; `production` when absent.
    public var environment: String?
    /// APNs: the app's bundle id.
    public var topic: String?
    /// Web Push: the browser's `PushSubscription` as `toJSON()` gives it.
    public var subscription: WebPushSubscriptionBody?
    /// The device's language, for the words a push adds (`en`, `de`).
    public var lang: String?

    public init(platform: DevicePlatform, token: String? = nil, environment: String? = nil, topic: String? = nil,
                subscription: WebPushSubscriptionBody? = nil, lang: String? = nil) {
        self.platform = platform
        self.token = token
        self.environment = environment
        self.topic = topic
        self.subscription = subscription
        self.lang = lang
    }

    public static let environments = ["production", "sandbox"]

    public func validate() throws {
        if let lang { try AuthRules.language(lang) }
        switch platform {
        case .apns:
            guard subscription == nil else {
                throw ServiceError.invalidArgument(field: "subscription", "an apns device has a token, not a subscription")
            }
            guard let token else { throw ServiceError.invalidArgument(field: "token", "token (the APNs device token in hex) is required") }
            try Check.length(token, field: "token", in: DeviceRules.apnsTokenHex)
            guard token.count % 2 == 0, token.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) || (0x41...0x46).contains($0) }) else {
                throw ServiceError.invalidArgument(field: "token", "token must be the device token in hex: an even number of 0–9 and a–f")
            }
            if let environment, !Self.environments.contains(environment) {
                throw ServiceError.invalidArgument(field: "environment", "environment must be sandbox or production")
            }
            guard let topic else { throw ServiceError.invalidArgument(field: "topic", "topic (the app's bundle id) is required") }
            try Check.length(topic, field: "topic", in: DeviceRules.topic)
            try Check.characters(topic, field: "topic", allowed: { $0 < 0x80 && ($0 == 0x2E || $0 == 0x2D || $0 == 0x5F || Identifier.isIDByte($0)) },
                                 description: "A–Z, a–z, 0–9, '.', '-' and '_'")
        case .webpush:
            guard token == nil, environment == nil, topic == nil else {
                throw ServiceError.invalidArgument(field: token != nil ? "token" : environment != nil ? "environment" : "topic",
                                                   "a webpush device has a subscription, not a token, environment or topic")
            }
            guard let subscription else {
                throw ServiceError.invalidArgument(field: "subscription", "subscription (the browser's PushSubscription) is required")
            }
            try subscription.validate()
        }
    }

    public func validated() throws -> DeviceRegisterRequest {
        try validate()
        var copy = self
        copy.token = token?.lowercased()
        return copy
    }
}

/// A browser's `PushSubscription.toJSON()`.
public struct WebPushSubscriptionBody: Codable, Sendable, Equatable {
    public struct Keys: Codable, Sendable, Equatable {
        /// The browser's P-256 public key, uncompressed, base64url.
        public var p256dh: String
        /// Its 16-byte authentication secret, base64url.
        public var auth: String

        public init(p256dh: String, auth: String) {
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    public var endpoint: String
    public var keys: Keys

    public init(endpoint: String, keys: Keys) {
        self.endpoint = endpoint
        self.keys = keys
    }

    func validate() throws {
        try Check.length(endpoint, field: "subscription.endpoint", in: DeviceRules.endpoint)
        guard let url = URLComponents(string: endpoint), url.scheme == "https", let host = url.host, !host.isEmpty,
              url.user == nil, url.password == nil else {
            throw ServiceError.invalidArgument(field: "subscription.endpoint", "subscription.endpoint must be an https URL")
        }
        try Check.length(keys.p256dh, field: "subscription.keys.p256dh", in: 80...100)
        try Check.length(keys.auth, field: "subscription.keys.auth", in: 16...32)
    }
}

public struct Device: Codable, Sendable, Equatable {
    public var id: String
    public var platform: DevicePlatform
    /// APNs only.
    public var token: String?
    public var environment: String?
    public var topic: String?
    /// Web Push only.
    public var endpoint: String?
    public var lang: String?
    public var registeredAt: Date

    public init(id: String, platform: DevicePlatform, token: String? = nil, environment: String? = nil, topic: String? = nil,
                endpoint: String? = nil, lang: String? = nil, registeredAt: Date) {
        self.id = id
        self.platform = platform
        self.token = token
        self.environment = environment
        self.topic = topic
        self.endpoint = endpoint
        self.lang = lang
        self.registeredAt = registeredAt
    }
}

public struct DeviceReply: Codable, Sendable, Equatable {
    public var device: Device
    public init(device: Device) { self.device = device }
}

public struct DevicesReply: Codable, Sendable, Equatable {
    /// Most recently registered first.
    public var devices: [Device]
    public init(devices: [Device]) { self.devices = devices }
}

public struct DeviceIdRequest: ValidatedBody, Equatable {
    public var deviceId: String
    public init(deviceId: String) { self.deviceId = deviceId }

    public func validate() throws {
        try Check.entityID(deviceId, field: "deviceId")
    }
}

/// `chat.mute`: whether a conversation's messages push to the caller's devices. Only
/// pushes are muted; messages still arrive and count as unread.
public struct MuteRequest: ValidatedBody, Equatable {
    public var conversationId: String
    public var muted: Bool

    public init(conversationId: String, muted: Bool) {
        self.conversationId = conversationId
        self.muted = muted
    }

    public func validate() throws {
        try Check.entityID(conversationId, field: "conversationId")
    }
}

public struct MuteReply: Codable, Sendable, Equatable {
    public var conversationId: String
    public var muted: Bool

    public init(conversationId: String, muted: Bool) {
        self.conversationId = conversationId
        self.muted = muted
    }
}

/// `chat.push.vapidKey`: the key a browser's `pushManager.subscribe` takes as `applicationServerKey`.
public struct VAPIDKeyReply: Codable, Sendable, Equatable {
    /// The server's P-256 public key, uncompressed, base64url.
    public var publicKey: String
    public init(publicKey: String) { self.publicKey = publicKey }
}

/// The pushes a service sends (chat's), in its `health`.
public struct PushQueueStatus: Codable, Sendable, Equatable {
    /// Pushes waiting for a retry, and messages whose pushes wait for their first try
    /// (one each, whatever the recipient's devices).
    public var pending: Int
    /// Seconds the oldest of them has waited; nil when none waits.
    public var oldestPendingSeconds: Double?
    /// Since the process started: pushes delivered, given up, and devices forgotten
    /// because their push service said they are gone (or their session ended).
    public var sent: Int
    public var failed: Int
    public var removed: Int
    /// Why the last try that failed did; nil when none has.
    public var lastError: String?
    /// `apns: https://api.push.apple.com …`, `webpush`; what is not configured says so.
    public var transports: [String]

    public init(pending: Int, oldestPendingSeconds: Double?, sent: Int, failed: Int, removed: Int, lastError: String?,
                transports: [String]) {
        self.pending = pending
        self.oldestPendingSeconds = oldestPendingSeconds
        self.sent = sent
        self.failed = failed
        self.removed = removed
        self.lastError = lastError
        self.transports = transports
    }
}
