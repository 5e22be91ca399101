import Contracts
import Foundation
import Push
import ServiceKit
import Wire

/// Devices, muting and the VAPID key: the handlers check, the store writes.
extension ChatHandlers {
    func registerDevices(into router: inout Router) {
        router.write(ChatAPI.devicesRegister, registerDevice)
        router.read(ChatAPI.devices, devices)
        router.write(ChatAPI.devicesDelete, deleteDevice)
        router.write(ChatAPI.mute, mute)
        router.read(ChatAPI.vapidKey, lane: .front) { [vapidPublicKey] _, _ in VAPIDKeyReply(publicKey: vapidPublicKey) }
    }

    func registerDevice(_ request: DeviceRegisterRequest, _ context: RequestContext) throws -> Committed<DeviceReply> {
        let caller = try context.requireCaller()
        let registration: ChatStore.DeviceRegistration
        switch request.platform {
        case .apns:
            registration = .init(platform: .apns, address: request.token ?? "", environment: request.environment ?? "production",
                                 topic: request.topic, lang: request.lang)
        case .webpush:
            guard let body = request.subscription,
                  let subscription = WebPushSubscription(endpoint: body.endpoint, p256dh: body.keys.p256dh, auth: body.keys.auth) else {
                throw ServiceError.invalidArgument(field: "subscription.keys",
                                                   "subscription.keys must be the browser's P-256 key (p256dh) and 16-byte secret (auth), base64url")
            }
            guard pushSettings.allowsEndpoint(subscription.endpoint) else {
                throw ServiceError.invalidArgument(field: "subscription.endpoint",
                                                   "subscription.endpoint is not at a push service this server sends to")
            }
            registration = .init(platform: .webpush, address: subscription.endpoint, p256dh: subscription.p256dh,
                                 authSecret: subscription.auth, lang: request.lang)
        }
        let now = Date()
        return try context.commit { db in
            DeviceReply(device: try store.register(registration, for: caller.userID, session: caller.sessionID, at: now, in: db))
        }
    }

    /// The caller's devices, less those whose session auth says has ended (they are
    /// forgotten on the way); all of them when auth cannot say.
    func devices(_ request: Empty, _ context: RequestContext) throws -> DevicesReply {
        let userId = try context.requireCaller().userID
        let devices = try store.devices(of: userId)
        let ended = Set((try? endedSessions(Array(Set(devices.map(\.session))))) ?? [])
        if !ended.isEmpty { try store.forgetDevices(ofSessions: Array(ended)) }
        return DevicesReply(devices: devices.filter { !ended.contains($0.session) }.map(\.device))
    }

    func deleteDevice(_ request: DeviceIdRequest, _ context: RequestContext) throws -> Committed<Empty> {
        let userId = try context.requireCaller().userID
        return try context.commit { db in
            try store.deleteDevice(request.deviceId, of: userId, in: db)
            return Empty()
        }
    }

    func mute(_ request: MuteRequest, _ context: RequestContext) throws -> Committed<MuteReply> {
        let userId = try context.requireCaller().userID
        return try context.commit { db in
            try store.setMuted(request.muted, conversation: request.conversationId, for: userId, in: db)
            return MuteReply(conversationId: request.conversationId, muted: request.muted)
        }
    }
}
