import Foundation
import Wire

/// A stand-in for APNs and Web Push push services, for tests: `push_server.py` beside
/// this file, HTTP/2 over TLS on Debian's `python3-h2`, checking each push with
/// `python3-cryptography` (the APNs provider token against the key's public half, the
/// VAPID token, the aes128gcm payload decrypted with the subscription's private key).
/// It makes its own certificate (trust `certificate`), its own APNs key (`apnsKeyFile`)
/// and one subscription key pair (`p256dh`, `auth`) every `/push/<name>` endpoint shares.
public final class PushTestServer {
    public struct Options: Sendable {
        /// APNs tokens answered 410 Unregistered, or 400 BadDeviceToken.
        public var goneTokens: [String] = []
        public var badTokens: [String] = []
        /// The first N APNs requests are answered 429.
        public var busyFirst = 0
        /// Web Push endpoint names answered 410.
        public var goneEndpoints: [String] = []
        /// The only apns-topic taken (others get 400 DeviceTokenNotForTopic).
        public var topic: String?
        /// Each request is answered (and kept) after a random wait of up to this many seconds.
        public var jitter: Double = 0
        /// Each request is answered this many seconds late (before any jitter).
        public var delay: Double = 0
        /// Offers (by ALPN) and speaks only HTTP/1.1, as some Web Push services do.
        public var http1Only = false
        /// With `http1Only`: each answer says `connection: close`, and the connection closes.
        public var http1Closes = false
        /// Each HTTP/2 connection ends with a GOAWAY once it answered this many requests (0: never).
        public var goAwayAfter = 0
        /// Each answer is followed by RST_STREAM (NO_ERROR), as nginx does when it answers before a request's body has all come.
        public var resetAfterAnswer = false

        public init(goneTokens: [String] = [], badTokens: [String] = [], busyFirst: Int = 0, goneEndpoints: [String] = [],
                    topic: String? = nil) {
            self.goneTokens = goneTokens
            self.badTokens = badTokens
            self.busyFirst = busyFirst
            self.goneEndpoints = goneEndpoints
            self.topic = topic
        }
    }

    /// One push the stand-in took, as it read it.
    public struct Received: Sendable {
        /// `apns` or `webpush`.
        public var kind: String
        /// The APNs device token, or the Web Push endpoint's name.
        public var address: String
        /// APNs: the `apns-*` headers.
        public var headers: [String: String]
        /// From the (decrypted) payload. APNs: `aps.alert.title` and `.body`, `aps.badge`,
        /// `aps.thread-id`, the app's keys beside `aps`; Web Push: `title`, `body`, `badge`, `tag`, `data`.
        public var title: String?
        public var body: String?
        public var badge: Int?
        public var threadId: String?
        public var data: [String: String]
        /// Web Push: the VAPID public key the push was signed with, and the Topic header.
        public var vapidKey: String?
        public var topic: String?
        /// The HTTP version it came over: `2` or `1.1`.
        public var http: String?

        init(_ record: [String: Any]) {
            kind = record["kind"] as? String ?? ""
            address = (record["token"] ?? record["name"]) as? String ?? ""
            headers = record["headers"] as? [String: String] ?? [:]
            let payload = record["payload"] as? [String: Any] ?? [:]
            if kind == "apns" {
                let aps = payload["aps"] as? [String: Any] ?? [:]
                let alert = aps["alert"] as? [String: Any] ?? [:]
                (title, body, badge, threadId) = (alert["title"] as? String, alert["body"] as? String, aps["badge"] as? Int,
                                                  aps["thread-id"] as? String)
                data = payload.compactMapValues { $0 as? String }
            } else {
                (title, body, badge, threadId) = (payload["title"] as? String, payload["body"] as? String, payload["badge"] as? Int,
                                                  payload["tag"] as? String)
                data = payload["data"] as? [String: String] ?? [:]
            }
            vapidKey = (record["vapid"] as? [String: Any])?["k"] as? String
            topic = record["topic"] as? String
            http = record["http"] as? String
        }
    }

    public let port: Int
    public let directory: URL
    public let certificate: URL
    /// The APNs token-signing key (PKCS #8 PEM, as Apple's `.p8`), with its ids.
    public let apnsKeyFile: URL
    public let apnsKeyID = "STANDIN01"
    public let apnsTeamID = "TEAMSTAND1"
    /// The subscription keys every Web Push endpoint of this server decrypts with.
    public let p256dh: String
    public let auth: String
    private let server: ScriptServer

    public init(_ options: Options = Options()) throws {
        directory = try ScriptServer.makeDirectory("hb-push")
        let tls = try ScriptServer.selfSignedCertificate(in: directory)
        certificate = tls.certificate
        apnsKeyFile = directory.appendingPathComponent("AuthKey_STANDIN01.p8")
        port = try ScriptServer.freePort()
        try ScriptServer.run("/usr/bin/openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", apnsKeyFile.path])
        var arguments = ["--port", "\(port)", "--dir", directory.appendingPathComponent("kept").path,
                         "--cert", certificate.path, "--key", tls.key.path, "--apns-key", apnsKeyFile.path,
                         "--apns-kid", apnsKeyID, "--apns-team", apnsTeamID,
                         "--gone", options.goneTokens.joined(separator: ","), "--bad", options.badTokens.joined(separator: ","),
                         "--busy-first", "\(options.busyFirst)", "--webpush-gone", options.goneEndpoints.joined(separator: ",")]
        if let topic = options.topic { arguments += ["--topic", topic] }
        if options.jitter > 0 { arguments += ["--jitter", "\(options.jitter)"] }
        if options.delay > 0 { arguments += ["--delay", "\(options.delay)"] }
        if options.http1Only { arguments.append("--http1") }
        if options.http1Closes { arguments.append("--http1-close") }
        if options.goAwayAfter > 0 { arguments += ["--goaway-after", "\(options.goAwayAfter)"] }
        if options.resetAfterAnswer { arguments.append("--reset-after-answer") }
        server = try ScriptServer(script: "push_server.py", arguments: arguments,
                                  missing: "are python3-h2 and python3-cryptography installed? make deps installs them")
        let ready = server.readyLine.split(separator: " ")
        guard ready.count == 3 else { throw ServiceError(code: .internal, message: "push_server.py: \(server.readyLine)") }
        (p256dh, auth) = (String(ready[1]), String(ready[2]))
    }

    public func stop() {
        server.stop()
    }

    /// `https://localhost:<port>`: the APNs URL, and the origin of every endpoint.
    public var url: String { "https://localhost:\(port)" }

    /// A Web Push endpoint at this server.
    public func endpoint(_ name: String) -> String { "\(url)/push/\(name)" }

    /// What a chat service needs to push here: APNs with this server's key, Web Push to it, its certificate trusted.
    public var environment: [String: String] {
        ["HEREABOUTS_APNS_KEY_FILE": apnsKeyFile.path, "HEREABOUTS_APNS_KEY_ID": apnsKeyID, "HEREABOUTS_APNS_TEAM_ID": apnsTeamID,
         "HEREABOUTS_APNS_URL": url, "HEREABOUTS_PUSH_CA_FILE": certificate.path, "HEREABOUTS_WEBPUSH_HOSTS": "localhost"]
    }

    /// The pushes taken so far, in the order they arrived.
    public var pushes: [Received] {
        lines("pushes.jsonl").map(Received.init)
    }

    /// Requests that broke a rule (a bad token, an undecryptable payload), as the stand-in described them.
    public var errors: [String] {
        lines("errors.jsonl").map { "\($0["kind"] as? String ?? ""): \($0["error"] as? String ?? "")" }
    }

    /// TLS connections made to the stand-in so far.
    public var connections: Int {
        Int((try? String(contentsOf: directory.appendingPathComponent("kept/connections"), encoding: .utf8)) ?? "") ?? 0
    }

    /// TLS connections closed so far (HTTP/2 ones, by either side).
    public var closedConnections: Int {
        Int((try? String(contentsOf: directory.appendingPathComponent("kept/closed"), encoding: .utf8)) ?? "") ?? 0
    }

    /// Waits up to `timeout` seconds for `count` pushes.
    public func waitFor(_ count: Int, timeout: TimeInterval = 30) -> [Received] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline && pushes.count < count { Thread.sleep(forTimeInterval: 0.05) }
        return pushes
    }

    private func lines(_ name: String) -> [[String: Any]] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("kept").appendingPathComponent(name), encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }
}
