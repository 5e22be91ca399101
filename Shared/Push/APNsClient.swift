import Crypto
import Foundation
import NIOCore
import Synchronization
import Wire

/// The team's token-signing key for APNs (a `.p8` file from Apple's developer site),
/// with its key id and team id.
public struct APNsCredentials: Sendable {
    public var keyID: String
    public var teamID: String
    public var privateKey: P256.Signing.PrivateKey

    public init(keyID: String, teamID: String, privateKey: P256.Signing.PrivateKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.privateKey = privateKey
    }

    /// Reads a `.p8` file (PKCS #8 PEM, as Apple hands it out).
    public init(keyID: String, teamID: String, keyFile: String) throws {
        let pem = try String(contentsOfFile: keyFile, encoding: .utf8)
        self.init(keyID: keyID, teamID: teamID, privateKey: try P256.Signing.PrivateKey(pemRepresentation: pem))
    }
}

/// A device's APNs environment: apps built for development get sandbox tokens.
public enum APNsEnvironment: String, Codable, Sendable, CaseIterable {
    case production
    case sandbox
}

/// Apple's provider API over HTTP/2 with token-based authentication: one POST per push
/// to `/3/device/<token>`, authorised by an ES256 JWT renewed every 40 minutes (Apple
/// refuses tokens older than an hour and ones renewed more often than every 20 minutes).
public final class APNsClient: Sendable {
    public static let productionURL = "https://api.push.apple.com"
    public static let sandboxURL = "https://api.sandbox.push.apple.com"
    /// A token's age at which the next push gets a new one.
    static let tokenLifetime: TimeInterval = 40 * 60

    private let credentials: APNsCredentials
    private let urls: [APNsEnvironment: String]
    private let http: PushHTTP
    private let token = Mutex<(value: String, issuedAt: Date)?>(nil)

    /// - Parameter url: one host for both environments (a stand-in, a proxy); Apple's two by default.
    public init(credentials: APNsCredentials, url: String? = nil, http: PushHTTP) {
        self.credentials = credentials
        self.urls = [.production: url ?? Self.productionURL, .sandbox: url ?? Self.sandboxURL]
        self.http = http
    }

    public var description: String {
        urls[.production] == urls[.sandbox] ? urls[.production] ?? "" : "\(Self.productionURL) and \(Self.sandboxURL)"
    }

    /// The provider token, renewed when it is 40 minutes old (or `renew`, after Apple
    /// called it expired).
    func providerToken(now: Date = Date(), renew: Bool = false) throws -> String {
        if !renew, let current = token.withLock({ $0 }), now.timeIntervalSince(current.issuedAt) < Self.tokenLifetime {
            return current.value
        }
        let value = try ES256Token.sign(header: ["kid": credentials.keyID],
                                        claims: ["iss": credentials.teamID, "iat": Int(now.timeIntervalSince1970)],
                                        with: credentials.privateKey)
        token.withLock { $0 = (value, now) }
        return value
    }

    /// The JSON APNs delivers to the app: the `aps` dictionary and the notification's data beside it.
    /// Written by Wire's writer, not `JSONSerialization` (a dictionary of `Any`, cast back
    /// member by member, took half of the push thread's time per push).
    static func payload(_ notification: PushNotification) -> Data {
        var aps: JSONObject = ["alert": ["title": .string(notification.title), "body": .string(notification.body)], "sound": "default"]
        if let badge = notification.badge { aps["badge"] = .number(.integer(Int64(badge))) }
        if let thread = notification.threadId { aps["thread-id"] = .string(thread) }
        // The app's own keys beside `aps`, which is Apple's whatever the data holds.
        var payload = notification.dataObject
        payload["aps"] = .object(aps)
        return JSONWriter.data(.object(payload), sortsKeys: true)
    }

    /// Sends one alert to one device. Never fails: every way it can end is an outcome.
    public func send(_ notification: PushNotification, to deviceToken: String, environment: APNsEnvironment, topic: String,
                     expiration: Date) -> EventLoopFuture<PushOutcome> {
        prepare(notification, to: deviceToken, environment: environment, topic: topic, expiration: expiration).send()
    }

    /// One alert to one device, ready to leave.
    public func prepare(_ notification: PushNotification, to deviceToken: String, environment: APNsEnvironment, topic: String,
                        expiration: Date) -> PreparedPush {
        let base = urls[environment] ?? Self.productionURL, path = "/3/device/\(deviceToken)"
        var headers = [("apns-topic", topic), ("apns-push-type", "alert"), ("apns-priority", "10"),
                       ("apns-expiration", String(Int(expiration.timeIntervalSince1970))), ("content-type", "application/json")]
        if let collapse = notification.collapseId { headers.append(("apns-collapse-id", String(collapse.prefix(64)))) }
        return attempt(base, path, headers: headers, body: Self.payload(notification), renew: false)
    }

    /// One POST; a second, with a freshly signed token, only when Apple called the token expired or invalid.
    private func attempt(_ base: String, _ path: String, headers: [(String, String)], body: Data, renew: Bool) -> PreparedPush {
        let token: String
        do {
            token = try providerToken(renew: renew)
        } catch {
            return PreparedPush(.failed("APNs: cannot sign a provider token: \(error)"), on: http.anyLoop)
        }
        let request = http.prepare(base: base, path: path, headers: [("authorization", "bearer \(token)")] + headers, body: body)
        return http.push(request) { [self] posted in
            posted.flatMap { answer in
                // A 200's body is empty: only a refusal's is read.
                if answer.status == 200 { return posted.eventLoop.makeSucceededFuture(.delivered) }
                let reason = Self.reason(answer.body)
                switch answer.status {
                case 410: return posted.eventLoop.makeSucceededFuture(.gone("APNs 410 \(reason ?? "Unregistered")"))
                case 400 where reason == "BadDeviceToken" || reason == "DeviceTokenNotForTopic":
                    return posted.eventLoop.makeSucceededFuture(.gone("APNs 400 \(reason ?? "")"))
                case 403 where reason == "ExpiredProviderToken" || reason == "InvalidProviderToken":
                    return renew ? posted.eventLoop.makeSucceededFuture(.retry("APNs refused a freshly signed provider token", after: nil))
                        : self.attempt(base, path, headers: headers, body: body, renew: true).send()
                default:
                    return posted.eventLoop.makeSucceededFuture(answer.transientFailure ?? .failed("APNs \(answer.status) \(reason ?? "")"))
                }
            }.recover { error in .retry("APNs: \(error)", after: nil) }
        }
    }

    /// The `reason` of APNs' error body (`{"reason":"BadDeviceToken"}`).
    static func reason(_ body: Data) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any] else { return nil }
        return object["reason"] as? String
    }
}
