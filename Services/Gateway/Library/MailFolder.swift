import Foundation
import Mail

/// The mail a stack without a relay kept: auth writes each message as an `.eml` file
/// in `HEREABOUTS_MAIL_DIR`, else `<data dir>/mail` (`here mail` lists them).
public struct MailFolder {
    public let directory: URL

    public struct Entry: Encodable, Sendable {
        public var file: String
        public var to: String
        public var subject: String
        public var date: String
        public var links: [String]
        public var text: String
    }

    public init(environment: [String: String]) {
        if let directory = environment["HEREABOUTS_MAIL_DIR"], !directory.isEmpty {
            self.directory = URL(fileURLWithPath: directory)
        } else {
            directory = Gateway.dataDirectory(environment).appendingPathComponent("mail")
        }
    }

    /// The messages, newest first (their names start with when they were written).
    public func entries() -> [Entry] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? [])
            .filter { $0.hasSuffix(".eml") && !$0.hasPrefix(".") }
        let dated = names.map { name -> (Date, String) in
            let path = directory.appendingPathComponent(name).path
            let modified = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? .distantPast
            return (modified, name)
        }
        return dated.sorted { $0.0 != $1.0 ? $0.0 > $1.0 : $0.1 > $1.1 }.compactMap { _, name in
            guard let raw = try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8) else { return nil }
            let mail = ReadMail(raw)
            return Entry(file: name, to: mail.to, subject: mail.subject, date: mail.date, links: mail.links, text: mail.text)
        }
    }
}
