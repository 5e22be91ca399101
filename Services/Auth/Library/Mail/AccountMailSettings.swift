import Foundation
import Mail

/// How auth sends its mail, from the environment:
/// - `HEREABOUTS_SMTP_URL`: the relay (`smtp://user:pass@host:587`, STARTTLS;
///   `smtps://…:465`; `?starttls=off` for a relay on a trusted network). Without it,
///   each mail is written as an `.eml` file in `HEREABOUTS_MAIL_DIR`, else
///   `<data dir>/mail` (development, the demo, tests; `here mail` lists them).
/// - `HEREABOUTS_SMTP_CA_FILE`: PEM certificates to trust for the relay besides the system's.
/// - `HEREABOUTS_MAIL_FROM`: `Name <address>` or an address (default
///   `Hereabouts <no-reply@<the public URL's host>>`).
/// - `HEREABOUTS_PUBLIC_URL`: where links point (default the console at the edge:
///   `http://<HEREABOUTS_EDGE_LISTEN, else 127.0.0.1:8080>`). Links are
///   `<url>/email/verify?token=…` and `<url>/password/reset?token=…`; an app's universal
///   link domain works as well as the console.
/// - `HEREABOUTS_MAIL_SHOW_LINKS`: see `showsLinks`.
public struct AccountMailSettings: Sendable {
    public var transport: any MailTransport
    public var from: MailAddress
    public var publicURL: String
    /// `HEREABOUTS_MAIL_SHOW_LINKS=1` (development: `here up --demo`): `auth.mail.latest`
    /// shows the newest mail to any address, so the console can offer its link. Only
    /// without a relay: a stack that mails real people never shows their links.
    public var showsLinks: Bool

    public init(environment: [String: String], dataDirectory: String) throws {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let listen = value("HEREABOUTS_EDGE_LISTEN") ?? "127.0.0.1:8080"
        let edge = listen.hasPrefix("0.0.0.0:") ? "127.0.0.1:" + listen.dropFirst(8) : listen
        var url = value("HEREABOUTS_PUBLIC_URL") ?? "http://\(edge)"
        while url.hasSuffix("/") { url.removeLast() }
        guard let components = URLComponents(string: url), ["http", "https"].contains(components.scheme?.lowercased() ?? ""),
              let host = components.host, !host.isEmpty, components.query == nil, components.fragment == nil else {
            throw SMTPConfigurationError("HEREABOUTS_PUBLIC_URL must be an http(s) URL without query or fragment, such as https://app.example.org, not \(url)")
        }
        publicURL = url
        if let text = value("HEREABOUTS_MAIL_FROM") {
            guard let address = Self.address(text) else {
                throw SMTPConfigurationError("HEREABOUTS_MAIL_FROM must be an address or Name <address>, not \(text)")
            }
            from = address
        } else {
            let domain = host.contains(".") && Int(host.split(separator: ".").last ?? "") == nil ? host : "hereabouts.localhost"
            from = MailAddress("no-reply@\(domain)", name: "Hereabouts")
        }
        showsLinks = ["1", "on", "true"].contains(value("HEREABOUTS_MAIL_SHOW_LINKS")?.lowercased() ?? "")
        if showsLinks && value("HEREABOUTS_SMTP_URL") != nil {
            throw SMTPConfigurationError("HEREABOUTS_MAIL_SHOW_LINKS is for a stack without a relay (development); unset it where HEREABOUTS_SMTP_URL mails real people")
        }
        if let smtp = value("HEREABOUTS_SMTP_URL") {
            transport = try SMTPTransport(configuration: try SMTPConfiguration(
                url: smtp, trustedCertificatesFile: value("HEREABOUTS_SMTP_CA_FILE"), clientName: from.address.split(separator: "@").last.map(String.init) ?? "localhost"))
        } else {
            let directory = value("HEREABOUTS_MAIL_DIR") ?? URL(fileURLWithPath: dataDirectory).appendingPathComponent("mail").path
            transport = MailDropTransport(directory: URL(fileURLWithPath: directory))
        }
    }

    /// `Name <a@b>` or `a@b`.
    static func address(_ text: String) -> MailAddress? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.hasSuffix(">"), let open = trimmed.lastIndex(of: "<") {
            let name = trimmed[..<open].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            let address = MailAddress(String(trimmed[trimmed.index(after: open)..<trimmed.index(before: trimmed.endIndex)]),
                                      name: name.isEmpty ? nil : name)
            return address.isSafe ? address : nil
        }
        let address = MailAddress(trimmed)
        return address.isSafe ? address : nil
    }
}
