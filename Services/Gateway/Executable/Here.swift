import ArgumentParser
import Contracts
import Foundation
import Gateway
import Wire

@main
struct Here: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "here",
        abstract: "Hereabouts from the terminal: run the stack, and every app's flow.",
        discussion: """
            Services are found at the endpoints HEREABOUTS_<SVC>_ENDPOINT name (default tcp://127.0.0.1:7101…7105).
            Exit codes: 0 ok, 1 your mistake, 2 a service unavailable, 3 internal.
            """,
        subcommands: [Up.self, Status.self, Backup.self, Restore.self, Call.self, Register.self, Login.self, Logout.self, Whoami.self, Anon.self,
                      Profile.self, LocationCommand.self, PostCommand.self, Rate.self, Search.self, Nearest.self, PlaceCommand.self,
                      CountryCommand.self, Divers.self, Fav.self, Chat.self, Fence.self, TripCommand.self, Tip.self, Within.self, Password.self, Account.self, Keys.self, Probe.self, MailCommand.self,
                      Errors.self])
}

/// Options every command takes.
struct CommonOptions: ParsableArguments {
    @Flag(help: "Print the result as one JSON document.")
    var json = false
}

/// A command's confirmation: the op's reply body with `--json`, a line otherwise.
func confirm(_ options: CommonOptions, _ reply: some Encodable, _ line: String) throws {
    if options.json { try Output.json(reply) } else { print(line) }
}

/// A command that talks to the services: errors print to stderr and exit with the
/// protocol's code mapped to 1, 2 or 3.
protocol GatewayCommand: ParsableCommand {
    func execute(_ gateway: Gateway) throws
}

extension GatewayCommand {
    func run() throws {
        do {
            try execute(Gateway())
        } catch let error as ExitCode {
            throw error
        } catch {
            let failure = GatewayError.from(error)
            FileHandle.standardError.write(Data("here: \(failure.message)\n".utf8))
            ErrorLog().record(command: CommandLine.arguments.dropFirst().joined(separator: " "), failure)
            throw ExitCode(failure.exitCode)
        }
    }
}

struct Errors: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "The last 50 errors here met, oldest first.")
    @OptionGroup var options: CommonOptions

    func run() throws {
        let entries = ErrorLog().entries()
        if options.json { return try Output.json(entries) }
        if entries.isEmpty { return print("no errors recorded") }
        Output.table(["TIME", "EXIT", "COMMAND", "MESSAGE"], entries.map {
            [Timestamp.format($0.at), "\($0.exitCode)", "here \($0.command)", $0.message]
        })
    }
}

struct Call: GatewayCommand {
    static let configuration = CommandConfiguration(
        abstract: "Send one request and print the reply's body (for debugging any service).",
        discussion: "Example: here call geo.places.search '{\"q\":\"Utrecht\",\"limit\":1}'. The session's token goes along when signed in.")

    @OptionGroup var options: CommonOptions  // the reply is always printed as JSON
    @Argument(help: "The op, e.g. geo.search.") var op: String
    @Argument(help: "The body, a JSON object (default {}).") var body: String = "{}"
    @Flag(help: "Send no token even when signed in.") var anonymous = false

    func execute(_ gateway: Gateway) throws {
        guard case .object(let object)? = try? JSONParser.parse(Data(body.utf8)) else {
            throw GatewayError("the body must be a JSON object")
        }
        Output.json(try gateway.callRaw(op: op, body: .object(object), token: anonymous ? .none : .ifSignedIn))
    }
}
