import Crypto
import Foundation
import NIOCore
import Synchronization
import Wire

/// A browser's push subscription, as `PushManager.subscribe()` hands it over.
public struct WebPushSubscription: Sendable, Equatable {
    public var endpoint: String
    /// The user agent's P-256 public key, uncompressed (65 bytes).
    public var p256dh: Data
    /// The 16-byte authentication secret.
    public var auth: Data

    /// Checks the keys' sizes and form; nil when they are not a P-256 point and a 16-byte secret.
    public init?(endpoint: String, p256dh: String, auth: String) {
        guard let key = Base64URL.decode(p256dh), key.count == 65, key.first == 4,
              (try? P256.KeyAgreement.PublicKey(x963Representation: key)) != nil,
              let secret = Base64URL.decode(auth), secret.count == 16 else { return nil }
        self.endpoint = endpoint
        self.p256dh = key
        self.auth = secret
    }
}

/// RFC 8291: a push message's payload encrypted for one subscription, in the
/// `aes128gcm` content coding of RFC 8188 (one record).
public enum WebPushEncryption {
    /// The record size written in the header; one record holds every payload a push service takes (4 KiB).
    static let recordSize: UInt32 = 4096

    public static func encrypt(_ plaintext: Data, for subscription: WebPushSubscription,
                               serverKey: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey(),
                               salt: Data = randomBytes(16)) throws -> Data {
        let userAgentKey = try P256.KeyAgreement.PublicKey(x963Representation: subscription.p256dh)
        let serverPublic = serverKey.publicKey.x963Representation
        let shared = try serverKey.sharedSecretFromKeyAgreement(with: userAgentKey)
        // IKM = HKDF(auth_secret, ecdh_secret, "WebPush: info" ‖ 0 ‖ ua_public ‖ as_public, 32)
        let keyInfo = Data("WebPush: info".utf8) + [0] + subscription.p256dh + serverPublic
        let ikm = shared.hkdfDerivedSymmetricKey(using: SHA256.self, salt: subscription.auth, sharedInfo: keyInfo, outputByteCount: 32)
        let cek = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt,
                                         info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonce = HKDF<SHA256>.deriveKey(inputKeyMaterial: ikm, salt: salt,
                                           info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        // The last (and only) record ends with the delimiter 2 and no padding.
        let sealed = try AES.GCM.seal(plaintext + [2], using: cek,
                                      nonce: AES.GCM.Nonce(data: nonce.withUnsafeBytes { Data($0) }))
        var header = salt
        withUnsafeBytes(of: recordSize.bigEndian) { header.append(contentsOf: $0) }
        header.append(UInt8(serverPublic.count))
        header.append(serverPublic)
        return header + sealed.ciphertext + sealed.tag
    }

    public static func randomBytes(_ count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<count).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }
}

/// The server's VAPID identity (RFC 8292): a P-256 key whose public half browsers are
/// given as `applicationServerKey`, and a contact (`mailto:` or `https:`) for push services.
public struct VAPIDKey: Sendable {
    public var privateKey: P256.Signing.PrivateKey
    public var subject: String

    public init(privateKey: P256.Signing.PrivateKey, subject: String) {
        self.privateKey = privateKey
        self.subject = subject
    }

    /// The public key, uncompressed and base64url: what `GET /v1/push/vapid-key` serves.
    public var publicKey: String { Base64URL.encode(privateKey.publicKey.x963Representation) }
}

/// Web Push (RFC 8030) with encrypted payloads and VAPID: one POST per push to the
/// subscription's endpoint.
public final class WebPushClient: Sendable {
    /// How long a VAPID token is kept for one push service (they are signed for 12 hours).
    static let tokenLifetime: TimeInterval = 3_600
    private let vapid: VAPIDKey
    private let http: PushHTTP
    private let tokens = Mutex<[String: (value: String, issuedAt: Date)]>([:])

    public init(vapid: VAPIDKey, http: PushHTTP) {
        self.vapid = vapid
        self.http = http
    }

    /// The browser's service worker reads this JSON from the push event.
    static func payload(_ notification: PushNotification) -> Data {
        var payload: JSONObject = ["title": .string(notification.title), "body": .string(notification.body),
                                   "data": .object(notification.dataObject)]
        if let badge = notification.badge { payload["badge"] = .number(.integer(Int64(badge))) }
        if let thread = notification.threadId { payload["tag"] = .string(thread) }
        return JSONWriter.data(.object(payload), sortsKeys: true)
    }

    /// `scheme://host[:port]` of an endpoint: the VAPID token's audience.
    static func audience(of endpoint: String) -> String? {
        guard let url = URLComponents(string: endpoint), let scheme = url.scheme, let host = url.host else { return nil }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }

    func token(audience: String, now: Date = Date()) throws -> String {
        if let kept = tokens.withLock({ $0[audience] }), now.timeIntervalSince(kept.issuedAt) < Self.tokenLifetime {
            return kept.value
        }
        let value = try ES256Token.sign(header: [:], claims: ["aud": audience, "sub": vapid.subject,
                                                              "exp": Int(now.timeIntervalSince1970) + 12 * 3_600],
                                        with: vapid.privateKey)
        tokens.withLock { $0[audience] = (value, now) }
        return value
    }

    /// Sends one notification to one subscription; never fails.
    public func send(_ notification: PushNotification, to subscription: WebPushSubscription,
                     timeToLive: TimeInterval) -> EventLoopFuture<PushOutcome> {
        prepare(notification, to: subscription, timeToLive: timeToLive).send()
    }

    /// One notification to one subscription, encrypted and ready to leave.
    public func prepare(_ notification: PushNotification, to subscription: WebPushSubscription,
                        timeToLive: TimeInterval) -> PreparedPush {
        do {
            guard let audience = Self.audience(of: subscription.endpoint) else {
                return PreparedPush(.gone("the endpoint is not a URL"), on: http.anyLoop)
            }
            let body = try WebPushEncryption.encrypt(Self.payload(notification), for: subscription)
            var headers = [("authorization", "vapid t=\(try token(audience: audience)), k=\(vapid.publicKey)"),
                           ("content-encoding", "aes128gcm"), ("content-type", "application/octet-stream"),
                           ("ttl", String(Int(max(0, timeToLive)))), ("urgency", "high")]
            // A Topic replaces an undelivered push of the same topic: at most 32 base64url characters.
            if let topic = notification.collapseId, topic.count <= 32,
               topic.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) {
                headers.append(("topic", topic))
            }
            return http.push(http.prepare(subscription.endpoint, headers: headers, body: body)) { posted in
                posted.map { answer in
                    switch answer.status {
                    case 200...299: return .delivered
                    case 404, 410: return .gone("Web Push \(answer.status)")
                    default: return answer.transientFailure ?? .failed("Web Push \(answer.status)\(answer.reasonSuffix)")
                    }
                }.recover { error in .retry("Web Push: \(error)", after: nil) }
            }
        } catch {
            return PreparedPush(.failed("Web Push: \(error)"), on: http.anyLoop)
        }
    }
}
