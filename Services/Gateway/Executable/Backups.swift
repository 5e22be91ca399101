import ArgumentParser
import Contracts
import Foundation
import Gateway

struct Backup: GatewayCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy every service's file into DIR while the stack serves, with DIR/manifest.json.",
        discussion: """
            Each service copies its own file (a consistent snapshot; writes go on), followers before \
            their sources (geo, favourites, chat, catalogue, auth), into its data directory; here moves \
            the copies into DIR and checks each against its SHA-256. The manifest names each file with \
            its size, SHA-256, its change feed's last seq and its cursors. The services must run on this \
            machine (as under here up). Schedule it with cron or your platform.
            """)
    @Argument(help: "An empty (or new) directory.") var directory: String
    @OptionGroup var options: CommonOptions

    func execute(_ gateway: Gateway) throws {
        let manifest = try Backups.take(into: URL(fileURLWithPath: directory), gateway: gateway) { reply in
            if !options.json { print("\(reply.service.padding(toLength: 11, withPad: " ", startingAt: 0))\(reply.bytes) bytes  feed seq \(reply.feedSeq)  sha256 \(reply.sha256.prefix(16))…") }
        }
        if options.json { try Output.json(manifest) } else { print("backup \(manifest.name) in \(directory)") }
    }
}

struct Restore: GatewayCommand {
    static let configuration = CommandConfiguration(
        abstract: "Put the files of a backup (here backup DIR) in place of the stack's; the stack must be stopped.",
        discussion: """
            Every file is checked against the manifest's SHA-256 first; nothing is replaced if one \
            does not match. The files replaced are kept in <data dir>/replaced-<time>/. Start the \
            stack again with here up. With --only, the other services keep their files; those that \
            follow a restored one see its feed behind their cursor, replay it from the start and \
            drop what it no longer has.
            """)
    @Argument(help: "A directory that here backup wrote.") var directory: String
    @Option(help: "The data directory to restore into (default: HEREABOUTS_DATA_DIR, else ~/.local/share/hereabouts).")
    var data: String?
    @Option(help: "Restore only these services' files (comma-separated, e.g. catalogue,auth).")
    var only: String?
    @OptionGroup var options: CommonOptions

    func execute(_ gateway: Gateway) throws {
        let target = data.map { URL(fileURLWithPath: $0) } ?? Gateway.dataDirectory(gateway.environment)
        let services = only.map { Set($0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }) }
        let manifest = try Backups.restore(from: URL(fileURLWithPath: directory), into: target, only: services, gateway: gateway)
        if options.json { try Output.json(manifest) } else {
            print("restored \(manifest.services.map(\.service).joined(separator: ", ")) from \(manifest.name) into \(target.path)")
        }
    }
}
