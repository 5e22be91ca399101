import Foundation
import Mail
import Wire

/// A real SMTP server for tests: `smtp_server.py` beside this file, on Debian's
/// `python3-aiosmtpd`, with the faults a relay shows (see the script). Every message
/// it accepts is kept as a file; `messages` reads them back.
public final class SMTPTestServer {
    public struct Options: Sendable {
        public enum Security: Sendable { case none, startTLS, implicitTLS }
        public var security: Security = .none
        /// `user:password` the server requires.
        public var credentials: String?
        /// The first N messages' data are answered 451.
        public var refuseFirst = 0
        /// The first N messages after those: the connection closes once their data arrived, unanswered.
        public var dropFirst = 0
        /// Every recipient is answered 550.
        public var rejectAll = false
        /// A port of its own choosing (a relay that comes back where it was); else a free one.
        public var port: Int?

        public init(security: Security = .none, credentials: String? = nil, refuseFirst: Int = 0, dropFirst: Int = 0,
                    rejectAll: Bool = false, port: Int? = nil) {
            self.port = port
            self.security = security
            self.credentials = credentials
            self.refuseFirst = refuseFirst
            self.dropFirst = dropFirst
            self.rejectAll = rejectAll
        }
    }

    /// One message as the server kept it.
    public struct Received: Sendable {
        public var recipients: [String]
        public var data: String

        /// The message read back (subject, text).
        public var read: ReadMail { ReadMail(data) }
        public var text: String { read.text }
        public var subject: String { read.subject }

        /// The path and token of the link to `base` in the text (`<base>/email/verify?token=…`).
        public func link(base: String) -> (path: String, token: String)? {
            let pattern = NSRegularExpression.escapedPattern(for: base) + #"(/[a-z/]+)\?token=([A-Za-z0-9_-]+)"#
            guard let range = text.range(of: pattern, options: .regularExpression),
                  let url = URLComponents(string: String(text[range])),
                  let token = url.queryItems?.first(where: { $0.name == "token" })?.value else { return nil }
            return (url.path, token)
        }
    }

    public let port: Int
    public let directory: URL
    /// The server's self-signed certificate (for `localhost`), to trust in the client.
    public let certificate: URL
    private let server: ScriptServer

    public init(_ options: Options = Options()) throws {
        directory = try ScriptServer.makeDirectory("hb-smtp")
        certificate = directory.appendingPathComponent("cert.pem")
        port = try options.port ?? ScriptServer.freePort()
        var arguments = ["--port", "\(port)", "--dir", directory.appendingPathComponent("kept").path]
        if options.security != .none {
            let tls = try ScriptServer.selfSignedCertificate(in: directory)
            arguments += [options.security == .startTLS ? "--starttls" : "--tls", tls.certificate.path, tls.key.path]
        }
        if let credentials = options.credentials { arguments += ["--auth", credentials] }
        if options.refuseFirst > 0 { arguments += ["--refuse-first", "\(options.refuseFirst)"] }
        if options.dropFirst > 0 { arguments += ["--drop-first", "\(options.dropFirst)"] }
        if options.rejectAll { arguments.append("--reject") }
        server = try ScriptServer(script: "smtp_server.py", arguments: arguments,
                                  missing: "is python3-aiosmtpd installed? make deps installs it")
    }

    public func stop() {
        server.stop()
    }

    /// The messages kept so far, in the order they arrived.
    public var messages: [Received] {
        let kept = directory.appendingPathComponent("kept")
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: kept.path)) ?? [])
            .filter { $0.hasSuffix(".eml") }.sorted { (Int($0.dropLast(4)) ?? 0) < (Int($1.dropLast(4)) ?? 0) }
        return names.map { name in
            let base = kept.appendingPathComponent(String(name.dropLast(4)))
            let recipients = (try? String(contentsOf: base.appendingPathExtension("rcpt"), encoding: .utf8)) ?? ""
            let data = (try? String(contentsOf: base.appendingPathExtension("eml"), encoding: .utf8)) ?? ""
            return Received(recipients: recipients.split(separator: "\n").map(String.init), data: data)
        }
    }

    /// Waits up to `timeout` seconds for `count` messages.
    public func waitFor(_ count: Int, timeout: TimeInterval = 30) -> [Received] {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline && messages.count < count { Thread.sleep(forTimeInterval: 0.05) }
        return messages
    }
}
