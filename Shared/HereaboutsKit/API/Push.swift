import Foundation

public typealias Device = Components.Schemas.Device
/// Which APNs environment a device token is from: `.sandbox` for builds run from Xcode
/// (the development aps-environment), `.production` for TestFlight and the App Store.
public typealias APNsEnvironment = Components.Schemas.DeviceRegisterRequest.EnvironmentPayload

extension Hereabouts {
    /// Registers this iPhone or iPad for pushes with the token `UIApplication` hands to
    /// `application(_:didRegisterForRemoteNotificationsWithDeviceToken:)`. Call it at
    /// every launch that gets a token: registering again updates the device. Signing
    /// out (`logout()`) forgets it on the server.
    ///
    /// - Parameters:
    ///   - topic: the app's bundle id (`Bundle.main.bundleIdentifier`).
    ///   - lang: the language of the words a push adds; by default the first of the
    ///     languages this client was made with (its `Accept-Language`).
    @discardableResult
    public func registerDevice(apnsToken: Data, environment: APNsEnvironment = .production, topic: String,
                               lang: String? = nil) async throws -> Device {
        let hex = apnsToken.map { String(format: "%02x", $0) }.joined()
        return try await registerDevice(.init(environment: environment, lang: lang, platform: .apns, token: hex, topic: topic))
    }

    /// Registers a browser's push subscription (`PushSubscription.toJSON()`'s endpoint and keys).
    @discardableResult
    public func registerWebPush(endpoint: String, p256dh: String, auth: String, lang: String? = nil) async throws -> Device {
        try await registerDevice(.init(lang: lang, platform: .webpush,
                                       subscription: .init(endpoint: endpoint, keys: .init(auth: auth, p256dh: p256dh))))
    }

    private func registerDevice(_ body: Components.Schemas.DeviceRegisterRequest) async throws -> Device {
        try await send { try await $0.registerDevice(body: .json(body)).created.body.json.device }
    }

    /// The signed-in user's devices, the most recently registered first.
    public func devices() async throws -> [Device] {
        try await send { try await $0.listDevices().ok.body.json.devices }
    }

    /// Forgets one of the user's devices: it gets no more pushes.
    public func deleteDevice(_ id: String) async throws {
        _ = try await send { try await $0.deleteDevice(path: .init(id: id)).noContent }
    }

    /// Mutes or unmutes a conversation's pushes (its messages still arrive and count as unread).
    public func setMuted(_ muted: Bool, conversation conversationId: String) async throws {
        _ = try await send { try await $0.muteConversation(path: .init(id: conversationId), body: .json(.init(muted: muted))).ok }
    }

    /// The server's VAPID public key (base64url), for a browser's `pushManager.subscribe`.
    public func vapidKey() async throws -> String {
        try await send { try await $0.vapidKey().ok.body.json.publicKey }
    }
}
