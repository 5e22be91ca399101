import Foundation
@testable import Mail
import ServiceKitTesting
import TestThreads
import Testing

@Suite("Mail messages")
struct MailMessageTests {
    let message = MailMessage(
        from: MailAddress("no-reply@hereabouts.example", name: "Hereabouts Köln"), to: MailAddress("jo@example.org"),
        subject: "Bitte bestätige deine E-Mail-Adresse für Hereabouts, das lange Betreffzeilen hat",
        text: "Hallo Jo,\n.\nöffne https://example.org/email/verify?token=abc=def\n" + String(repeating: "x", count: 200) + " \n",
        html: "<p>Hallo Jo</p>", messageID: "0123abcd@hereabouts.example", date: Date(timeIntervalSince1970: 1_795_000_000))

    @Test("a message is 7-bit MIME: CRLF lines of at most 78 characters, encoded words, both parts quoted-printable and back")
    func rendering() throws {
        let text = String(decoding: message.rendered(), as: UTF8.self)
        #expect(text.utf8.allSatisfy { $0 < 128 })
        #expect(!text.replacingOccurrences(of: "\r\n", with: "").contains("\n") && !text.replacingOccurrences(of: "\r\n", with: "").contains("\r"))
        for line in text.components(separatedBy: "\r\n") { #expect(line.count <= 78, "\(line)") }
        let (head, body) = try #require(text.range(of: "\r\n\r\n").map { (String(text[..<$0.lowerBound]), String(text[$0.upperBound...])) })
        #expect(head.contains("From: =?UTF-8?B?") && head.contains(" <no-reply@hereabouts.example>"))
        #expect(head.contains("To: jo@example.org\r\nSubject: =?UTF-8?B?"))
        #expect(head.contains("Date: Wed, 18 Nov 2026 11:06:40 +0000\r\n"))
        #expect(head.contains("Message-ID: <0123abcd@hereabouts.example>\r\nMIME-Version: 1.0\r\n"))
        #expect(head.contains("Content-Type: multipart/alternative; boundary=\"=_hereabouts_0123abcd\""))
        // The subject's encoded words decode to the subject.
        let words = head.components(separatedBy: "\r\n").drop { !$0.hasPrefix("Subject:") }.prefix { $0.hasPrefix("Subject:") || $0.hasPrefix(" ") }
        let decoded = words.map { line -> String in
            let word = line.replacingOccurrences(of: "Subject: ", with: "").trimmingCharacters(in: .whitespaces)
            return String(decoding: Data(base64Encoded: String(word.dropFirst(10).dropLast(2))) ?? Data(), as: UTF8.self)
        }.joined()
        #expect(decoded == message.subject)
        let parts = body.components(separatedBy: "--=_hereabouts_0123abcd")
        #expect(parts.count == 4 && parts[3] == "--\r\n")
        let plain = try #require(parts[1].range(of: "\r\n\r\n").map { String(parts[1][$0.upperBound...]) })
        #expect(parts[1].contains("Content-Type: text/plain; charset=UTF-8\r\nContent-Transfer-Encoding: quoted-printable"))
        #expect(QuotedPrintable.decode(String(plain.dropLast())) == message.text)  // "\r\n" is one Character
        #expect(plain.contains("=2E\r\n") && plain.contains("token=3Dabc=3Ddef"))
    }

    @Test("quoted-printable round-trips any text, and dot-stuffing doubles a dot that starts a line")
    func quotedPrintableAndDots() {
        for sample in ["", "a", "é", "trailing space ", "tab\t", "line\n\nbreaks\r\nmixed", String(repeating: "ü", count: 100), "=\n.\n..x", "🧭 Köln"] {
            #expect(QuotedPrintable.decode(QuotedPrintable.encode(sample)) == sample.replacingOccurrences(of: "\r\n", with: "\n"))
        }
        #expect(SMTPSession.dotStuffed(Data(".a\r\nb\r\n..c".utf8)) == Data("..a\r\nb\r\n...c\r\n".utf8))
    }

    @Test("HEREABOUTS_SMTP_URL: STARTTLS by default, smtps for TLS from the start, starttls=off, percent-decoded credentials")
    func configuration() throws {
        let relay = try SMTPConfiguration(url: "smtp://me%40example.org:p%3Ass@relay.example.org:2525")
        #expect(relay.host == "relay.example.org" && relay.port == 2525 && relay.security == .startTLS)
        #expect(relay.username == "me@example.org" && relay.password == "p:ss")
        #expect(!relay.description.contains("p:ss") && !relay.description.contains("p%3Ass"))
        #expect(try SMTPConfiguration(url: "smtps://relay.example.org").port == 465)
        #expect(try SMTPConfiguration(url: "smtps://relay.example.org").security == .implicitTLS)
        #expect(try SMTPConfiguration(url: "smtp://relay.example.org").port == 587)
        #expect(try SMTPConfiguration(url: "smtp://127.0.0.1:25?starttls=off").security == .none)
        for bad in ["relay.example.org", "http://relay.example.org", "smtp://user@relay.example.org", "smtp://relay.example.org?starttls=maybe", "smtp://"] {
            #expect(throws: SMTPConfigurationError.self, "\(bad)") { try SMTPConfiguration(url: bad) }
        }
        #expect(!SMTPConfiguration.redacted("smtp://u:secret@h").contains("secret"))
    }
}

@Suite("SMTP delivery against a real server", .serialized, .ownThread)
struct SMTPDeliveryTests {
    static func message(to address: String = "jo@example.org") -> MailMessage {
        MailMessage(from: MailAddress("no-reply@hereabouts.example", name: "Hereabouts"), to: MailAddress(address),
                    subject: "Bestätigen", text: "Hallo\n.\nEnde", html: "<p>Hallo</p>")
    }

    static func transport(_ server: SMTPTestServer, _ url: String, trusted: Bool = true) throws -> SMTPTransport {
        var configuration = try SMTPConfiguration(url: url, trustedCertificatesFile: trusted && FileManager.default.fileExists(atPath: server.certificate.path) ? server.certificate.path : nil)
        configuration.replyTimeout = 10
        return try SMTPTransport(configuration: configuration)
    }

    @Test("STARTTLS and AUTH: the message arrives whole, to its recipient; a wrong password is refused for good")
    func startTLS() throws {
        let server = try SMTPTestServer(.init(security: .startTLS, credentials: "relay:s3cret"))
        let message = Self.message()
        try Self.transport(server, "smtp://relay:s3cret@localhost:\(server.port)").deliver(message)
        let received = server.waitFor(1)
        try #require(received.count == 1)
        #expect(received[0].recipients == ["jo@example.org"])
        #expect(received[0].data.replacingOccurrences(of: "\r\n", with: "\n") == String(decoding: message.rendered(), as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n"))
        #expect(throws: MailDeliveryError.self) {
            do { try Self.transport(server, "smtp://relay:wrong@localhost:\(server.port)").deliver(message) } catch let error as MailDeliveryError {
                guard case .permanent = error else { Issue.record("not permanent: \(error)"); throw error }
                throw error
            }
        }
        // A certificate nobody vouches for: nothing is sent.
        #expect(throws: MailDeliveryError.self) { try Self.transport(server, "smtp://relay:s3cret@localhost:\(server.port)", trusted: false).deliver(message) }
        #expect(server.messages.count == 1)
    }

    @Test("smtps: TLS from the first byte")
    func implicitTLS() throws {
        let server = try SMTPTestServer(.init(security: .implicitTLS, credentials: "relay:s3cret"))
        try Self.transport(server, "smtps://relay:s3cret@localhost:\(server.port)").deliver(Self.message())
        #expect(server.waitFor(1).count == 1)
    }

    @Test("a relay without STARTTLS is refused unless the URL says starttls=off; then it is used in the clear")
    func plain() throws {
        let server = try SMTPTestServer()
        #expect(throws: MailDeliveryError.self) { try Self.transport(server, "smtp://localhost:\(server.port)").deliver(Self.message()) }
        #expect(server.messages.isEmpty)
        try Self.transport(server, "smtp://127.0.0.1:\(server.port)?starttls=off").deliver(Self.message())
        #expect(server.waitFor(1).count == 1)
    }

    @Test("451 and a dropped connection are temporary, 550 permanent, nothing listening temporary")
    func failures() throws {
        let flaky = try SMTPTestServer(.init(refuseFirst: 1, dropFirst: 1))
        let transport = try Self.transport(flaky, "smtp://127.0.0.1:\(flaky.port)?starttls=off")
        #expect(throws: MailDeliveryError.transient("127.0.0.1 refused the message: 451 4.3.0 try again later")) { try transport.deliver(Self.message()) }
        #expect(throws: MailDeliveryError.transient("the relay closed the connection")) { try transport.deliver(Self.message()) }
        try transport.deliver(Self.message())
        #expect(flaky.waitFor(1).count == 1)

        let rejecting = try SMTPTestServer(.init(rejectAll: true))
        #expect(throws: MailDeliveryError.permanent("127.0.0.1 refused RCPT TO: 550 5.1.1 no such mailbox")) {
            try Self.transport(rejecting, "smtp://127.0.0.1:\(rejecting.port)?starttls=off").deliver(Self.message())
        }
        rejecting.stop()
        #expect(throws: MailDeliveryError.self) {
            do { try Self.transport(rejecting, "smtp://127.0.0.1:\(rejecting.port)?starttls=off").deliver(Self.message()) } catch let error as MailDeliveryError {
                guard case .transient = error else { Issue.record("\(error)"); throw error }
                throw error
            }
        }
    }

    @Test("the mail drop writes each message whole as a file")
    func mailDrop() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-maildrop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let message = Self.message()
        try MailDropTransport(directory: directory).deliver(message)
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        #expect(files.count == 1 && files[0].hasSuffix(".eml") && !files[0].hasPrefix("."))
        #expect(try Data(contentsOf: directory.appendingPathComponent(files[0])) == message.rendered())
    }
}
