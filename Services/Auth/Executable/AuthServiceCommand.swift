import ArgumentParser
import Auth
import Foundation
import Logging
import ServiceKit

@main
struct AuthServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "auth-service",
        abstract: "Hereabouts auth: accounts, sessions and tokens, over ZeroMQ.",
        discussion: "Stops cleanly on SIGTERM or SIGINT. Its data is <data dir>/auth.sqlite.")

    @OptionGroup var options: ServiceOptions

    @Option(name: .customLong("hash-workers"),
            help: "Threads that hash passwords (default: HEREABOUTS_AUTH_HASH_WORKERS, else one per two cores).")
    var hashWorkers: Int?

    func run() async throws {
        let settings = try ServiceSettings(service: "auth", options: options)
        bootstrapLogging(level: settings.logLevel)
        let logger = Logger(label: "hereabouts.auth")
        var authOptions = AuthService.Options()
        if let text = hashWorkers.map(String.init) ?? settings.environment["HEREABOUTS_AUTH_HASH_WORKERS"] {
            guard let count = Int(text), (1...64).contains(count) else {
                throw ValidationError("hash workers must be a number from 1 to 64, not \(text)")
            }
            authOptions.hashWorkers = count
        }
        if let text = settings.environment["HEREABOUTS_AUTH_ACCOUNTS_PER_ADDRESS"], !text.isEmpty {
            guard let count = Int(text), (0...1_000_000).contains(count) else {
                throw ValidationError("HEREABOUTS_AUTH_ACCOUNTS_PER_ADDRESS must be new accounts per hour from 0 (no limit) to 1000000, not \(text)")
            }
            authOptions.accountsPerAddressPerHour = count == 0 ? nil : count
        }
        let service = try AuthService(settings: settings, options: authOptions, logger: logger)
        try await ServiceHost.run([service], logger: logger)
    }
}
