import ArgumentParser
import Foundation
import Gateway

struct MailCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mail", abstract: "The mail a stack without a relay kept (confirmation and reset links), newest first.",
        discussion: """
            Without HEREABOUTS_SMTP_URL auth writes each mail as an .eml file in HEREABOUTS_MAIL_DIR, else \
            <data dir>/mail; this lists them with their links. With a relay, mail leaves and nothing is kept here.
            """)
    @OptionGroup var options: CommonOptions
    @Option(help: "Only mail to this address.") var to: String?
    @Option(help: "At most this many.") var last = 10
    @Flag(help: "Print each message's text too.") var text = false

    func run() throws {
        let folder = MailFolder(environment: ProcessInfo.processInfo.environment)
        let entries = Array(folder.entries().filter { entry in to.map { entry.to.lowercased() == $0.lowercased() } ?? true }.prefix(max(0, last)))
        if options.json { return try Output.json(entries) }
        if entries.isEmpty { return print("no mail in \(folder.directory.path)") }
        for entry in entries {
            print("\(entry.date)  to \(entry.to)\n  \(entry.subject)")
            for link in entry.links { print("  \(link)") }
            if text { print(entry.text.split(separator: "\n", omittingEmptySubsequences: false).map { "    \($0)" }.joined(separator: "\n")) }
        }
    }
}
