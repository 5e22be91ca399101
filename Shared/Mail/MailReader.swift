import Foundation

/// A message as `MailMessage.rendered()` writes it, read back: its headers decoded
/// and its text part. For `here mail` (the mail drop's files) and the tests' relay;
/// not a general MIME parser.
public struct ReadMail: Sendable, Equatable {
    public var to: String
    public var subject: String
    public var date: String
    /// The text part, decoded.
    public var text: String

    public init(_ raw: String) {
        let flat = raw.replacingOccurrences(of: "\r\n", with: "\n")
        let head = flat.components(separatedBy: "\n\n").first ?? ""
        // Folded header lines continue with a space.
        let headers = head.replacingOccurrences(of: "\n ", with: " ").split(separator: "\n")
        func header(_ name: String) -> String {
            headers.first { $0.hasPrefix(name + ": ") }.map { String($0.dropFirst(name.count + 2)) } ?? ""
        }
        to = header("To")
        date = header("Date")
        subject = Self.decodedWords(header("Subject"))
        if let start = flat.range(of: "Content-Type: text/plain; charset=UTF-8\nContent-Transfer-Encoding: quoted-printable\n\n"),
           let end = flat.range(of: "\n--=_hereabouts_", range: start.upperBound..<flat.endIndex) {
            text = QuotedPrintable.decode(String(flat[start.upperBound..<end.lowerBound]))
        } else {
            text = ""
        }
    }

    /// The http(s) links in the text, in order.
    public var links: [String] { Self.links(in: text) }

    /// The http(s) links of a text, in order (a link stands alone between spaces or lines).
    public static func links(in text: String) -> [String] {
        text.split(whereSeparator: \.isWhitespace).map(String.init).filter { $0.hasPrefix("http://") || $0.hasPrefix("https://") }
    }

    /// RFC 2047 "B" words (as `MIMEHeader` writes them) decoded; other text as it is.
    static func decodedWords(_ value: String) -> String {
        guard value.hasPrefix("=?UTF-8?B?") else { return value }
        return value.split(separator: " ").map { word in
            guard word.hasPrefix("=?UTF-8?B?"), word.hasSuffix("?=") else { return String(word) }
            return String(decoding: Data(base64Encoded: String(word.dropFirst(10).dropLast(2))) ?? Data(), as: UTF8.self)
        }.joined()
    }
}
