import Foundation

/// Where mail goes: an SMTP relay, or (with no relay configured) a directory of
/// `.eml` files. `deliver` blocks until the message is accepted or refused.
public protocol MailTransport: Sendable {
    /// Throws `MailDeliveryError`: `.transient` for what is worth trying again later,
    /// `.permanent` for what never will be accepted.
    func deliver(_ message: MailMessage) throws
    /// For logs and health: `smtp://relay.example.org:587`, `files in /data/mail`.
    var description: String { get }
}

/// Why a message was not delivered, as a sender decides what to do next: RFC 5321's
/// 4xx replies, refused connections and time-outs pass; 5xx replies do not.
public enum MailDeliveryError: Error, Equatable, CustomStringConvertible {
    case transient(String)
    case permanent(String)

    public var description: String {
        switch self {
        case .transient(let reason): "temporary: \(reason)"
        case .permanent(let reason): "permanent: \(reason)"
        }
    }
}

/// Writes each message as `<directory>/<date>-<message id>.eml`, for development and
/// tests with no mail server (`here mail` lists them). A file appears whole: written
/// under a temporary name, then renamed.
public struct MailDropTransport: MailTransport {
    public let directory: URL

    public init(directory: URL) {
        self.directory = directory
    }

    public var description: String { "files in \(directory.path)" }

    public func deliver(_ message: MailMessage) throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let stamp = ISO8601DateFormatter().string(from: message.date).replacingOccurrences(of: ":", with: "")
            let name = "\(stamp)-\(message.messageID.prefix(while: { $0 != "@" })).eml"
            let temporary = directory.appendingPathComponent(".\(name).partial")
            try message.rendered().write(to: temporary)
            try FileManager.default.moveItem(at: temporary, to: directory.appendingPathComponent(name))
        } catch let error as MailDeliveryError {
            throw error
        } catch {
            throw MailDeliveryError.transient("cannot write to \(directory.path): \(error)")
        }
    }
}

/// A relay, as `HEREABOUTS_SMTP_URL` names it:
/// - `smtp://user:pass@host:587` — STARTTLS, required (a relay that does not offer it
///   is refused, so no password and no mail crosses the network in the clear);
/// - `smtps://user:pass@host:465` — TLS from the first byte;
/// - `smtp://host:25?starttls=off` — no TLS, for a relay on the same host or a private
///   network.
/// User and password are percent-decoded, so `@` and `:` in them are written `%40`, `%3A`.
public struct SMTPConfiguration: Sendable, Equatable {
    public enum Security: Sendable, Equatable {
        case startTLS
        case implicitTLS
        case none
    }

    public var host: String
    public var port: Int
    public var security: Security
    public var username: String?
    public var password: String?
    /// PEM certificates to trust besides the system's (a relay with a private CA).
    public var trustedCertificatesFile: String?
    /// The name this side gives in EHLO.
    public var clientName: String
    /// How long to wait for a connection, and for each reply.
    public var connectTimeout: TimeInterval = 15
    public var replyTimeout: TimeInterval = 60

    public init(url text: String, trustedCertificatesFile: String? = nil, clientName: String = "localhost") throws {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
              let host = components.host, !host.isEmpty else {
            throw SMTPConfigurationError("HEREABOUTS_SMTP_URL must look like smtp://user:password@host:587 or smtps://host:465, not \(Self.redacted(text))")
        }
        switch scheme {
        case "smtp":
            let startTLS = components.queryItems?.first { $0.name == "starttls" }?.value?.lowercased()
            switch startTLS {
            case nil, "on", "required": security = .startTLS
            case "off": security = .none
            default: throw SMTPConfigurationError("HEREABOUTS_SMTP_URL: starttls is on or off, not \(startTLS ?? "")")
            }
        case "smtps":
            security = .implicitTLS
        default:
            throw SMTPConfigurationError("HEREABOUTS_SMTP_URL must start with smtp:// or smtps://, not \(scheme)://")
        }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        port = components.port ?? (security == .implicitTLS ? 465 : 587)
        guard (1...65_535).contains(port) else { throw SMTPConfigurationError("HEREABOUTS_SMTP_URL: no port \(port)") }
        username = components.percentEncodedUser.flatMap { $0.removingPercentEncoding }
        password = components.percentEncodedPassword.flatMap { $0.removingPercentEncoding }
        if (username == nil) != (password == nil) {
            throw SMTPConfigurationError("HEREABOUTS_SMTP_URL: give both a user and a password, or neither")
        }
        self.trustedCertificatesFile = trustedCertificatesFile
        self.clientName = clientName
    }

    /// The URL without its password, for logs.
    public var description: String {
        let scheme = security == .implicitTLS ? "smtps" : "smtp"
        let user = username.map { "\($0)@" } ?? ""
        return "\(scheme)://\(user)\(host):\(port)\(security == .none ? "?starttls=off" : "")"
    }

    static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "…"
        return components.string ?? "(the URL)"
    }
}

public struct SMTPConfigurationError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
