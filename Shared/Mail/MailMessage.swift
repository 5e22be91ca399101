import Foundation

/// One mail as it leaves: addresses, a subject and the same text as plain text and
/// HTML. `rendered()` writes it as an RFC 5322 message with MIME (RFC 2045–2047):
/// every line 7-bit and at most 78 characters, so any relay passes it on unchanged.
public struct MailMessage: Sendable, Equatable, Codable {
    public var from: MailAddress
    public var to: MailAddress
    public var subject: String
    public var text: String
    public var html: String
    /// Without angle brackets: `<id>@<domain>`.
    public var messageID: String
    public var date: Date

    public init(from: MailAddress, to: MailAddress, subject: String, text: String, html: String,
                messageID: String? = nil, date: Date = Date()) {
        self.from = from
        self.to = to
        self.subject = subject
        self.text = text
        self.html = html
        self.messageID = messageID ?? MailMessage.newMessageID(domain: from.domain)
        self.date = date
    }

    /// A Message-ID no one else makes: 128 random bits at the sender's domain.
    public static func newMessageID(domain: String) -> String {
        var generator = SystemRandomNumberGenerator()
        let random = (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        return "\(random)@\(domain)"
    }

    /// The message, with CRLF line ends, ready for SMTP's DATA (before dot-stuffing).
    public func rendered() -> Data {
        let boundary = "=_hereabouts_" + messageID.prefix(while: { $0 != "@" })
        var lines: [String] = [
            "From: \(from.header)",
            "To: \(to.header)",
            "Subject: \(MIMEHeader.encoded(subject, offset: "Subject: ".count))",
            "Date: \(MIMEHeader.date(date))",
            "Message-ID: <\(messageID)>",
            "MIME-Version: 1.0",
            // Tells mail servers and vacation responders that no person wrote it (RFC 3834).
            "Auto-Submitted: auto-generated",
            "Content-Type: multipart/alternative; boundary=\"\(boundary)\"",
            "",
        ]
        for (type, body) in [("text/plain", text), ("text/html", html)] {
            lines.append("--\(boundary)")
            lines.append("Content-Type: \(type); charset=UTF-8")
            lines.append("Content-Transfer-Encoding: quoted-printable")
            lines.append("")
            lines.append(QuotedPrintable.encode(body))
        }
        lines.append("--\(boundary)--")
        lines.append("")
        return Data(lines.joined(separator: "\r\n").utf8)
    }
}

/// An address with an optional display name. The address itself is checked where it
/// enters (an email field's rules); what reaches a header or an SMTP command here
/// holds no line break, space, or angle bracket, whatever the caller passed.
public struct MailAddress: Sendable, Equatable, Codable {
    public var address: String
    public var name: String?

    public init(_ address: String, name: String? = nil) {
        self.address = address
        self.name = name
    }

    /// Whether `address` can go into an SMTP command and a header as it is.
    public var isSafe: Bool {
        let parts = address.split(separator: "@", omittingEmptySubsequences: false)
        return parts.count == 2 && !parts[0].isEmpty && !parts[1].isEmpty
            && address.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F && $0 != "<" && $0 != ">" }
    }

    var domain: String { String(address.split(separator: "@").last ?? "localhost") }

    /// `Name <address>`, the name as an encoded word when it is not plain ASCII.
    var header: String {
        guard let name, !name.isEmpty else { return address }
        return "\(MIMEHeader.phrase(name)) <\(address)>"
    }
}

/// Header values as RFC 2047 and RFC 5322 want them.
enum MIMEHeader {
    /// Plain printable ASCII stays as it is; anything else becomes UTF-8 "B" encoded
    /// words of at most 75 characters each, on folded lines.
    static func encoded(_ value: String, offset: Int) -> String {
        let flat = value.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        if flat.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) && flat.count + offset <= 78 {
            return flat
        }
        // An encoded word is 12 characters of wrapping and 4 of base64 per 3 bytes, at most
        // 75 in all (45 bytes); the first shares its line with the header's name, the
        // others follow a folding space.
        var words: [String] = []
        var chunk = Data()
        for character in flat {
            let bytes = Data(String(character).utf8)
            let room = words.isEmpty ? min(45, (78 - offset - 12) / 4 * 3) : 45
            if chunk.count + bytes.count > room, !chunk.isEmpty {
                words.append("=?UTF-8?B?\(chunk.base64EncodedString())?=")
                chunk = Data()
            }
            chunk.append(bytes)
        }
        if !chunk.isEmpty { words.append("=?UTF-8?B?\(chunk.base64EncodedString())?=") }
        return words.joined(separator: "\r\n ")
    }

    /// A display name: quoted when it holds specials, encoded when it is not ASCII.
    static func phrase(_ name: String) -> String {
        let flat = name.replacingOccurrences(of: "\r", with: " ").replacingOccurrences(of: "\n", with: " ")
        guard flat.unicodeScalars.allSatisfy({ $0.value >= 0x20 && $0.value < 0x7F }) else { return encoded(flat, offset: 78) }
        let escaped = flat.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "\"\(escaped)\""
    }

    /// `Thu, 26 Nov 2026 10:40:00 +0000`.
    static func date(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss '+0000'"
        return formatter.string(from: date)
    }
}

/// Quoted-printable (RFC 2045, 6.7) of UTF-8 text: line breaks become CRLF, lines are
/// at most 76 characters (soft breaks `=`), and `=`, bytes outside printable ASCII,
/// and spaces before a line end are written `=XX`, as is a dot that starts a line
/// (some relays mangle those despite SMTP's dot-stuffing).
public enum QuotedPrintable {
    public static func encode(_ text: String) -> String {
        let normalised = text.replacingOccurrences(of: "\r\n", with: "\n").replacingOccurrences(of: "\r", with: "\n")
        return normalised.split(separator: "\n", omittingEmptySubsequences: false).map { encodeLine(Substring($0)) }
            .joined(separator: "\r\n")
    }

    private static func encodeLine(_ line: Substring) -> String {
        let bytes = Array(line.utf8)
        var tokens: [String] = []
        for (index, byte) in bytes.enumerated() {
            let last = index == bytes.count - 1
            let plain = (byte >= 33 && byte <= 126 && byte != UInt8(ascii: "=")) || ((byte == 32 || byte == 9) && !last)
            let first = index == 0 && byte == UInt8(ascii: ".")
            tokens.append(plain && !first ? String(UnicodeScalar(byte)) : String(format: "=%02X", byte))
        }
        // Soft breaks keep each physical line to 76 characters, the `=` included, and never split a token.
        var lines: [String] = []
        var current = ""
        for token in tokens {
            if current.count + token.count > 75 {
                lines.append(current + "=")
                current = ""
            }
            current += token
        }
        lines.append(current)
        return lines.joined(separator: "\r\n")
    }

    /// The text back (for tests, and for reading `.eml` files).
    public static func decode(_ encoded: String) -> String {
        var bytes: [UInt8] = []
        let lines = encoded.replacingOccurrences(of: "\r\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
        for (number, line) in lines.enumerated() {
            var utf8 = Array(line.utf8)
            let soft = utf8.last == UInt8(ascii: "=")
            if soft { utf8.removeLast() }
            var index = 0
            while index < utf8.count {
                if utf8[index] == UInt8(ascii: "="), index + 2 < utf8.count,
                   let value = UInt8(String(decoding: utf8[(index + 1)...(index + 2)], as: UTF8.self), radix: 16) {
                    bytes.append(value)
                    index += 3
                } else {
                    bytes.append(utf8[index])
                    index += 1
                }
            }
            if !soft && number < lines.count - 1 { bytes.append(contentsOf: [13, 10]) }
        }
        return String(decoding: bytes, as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n")
    }
}
