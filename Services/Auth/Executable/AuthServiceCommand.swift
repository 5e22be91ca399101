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
        if let text = settings.environment["HEREABOUTS_AUTH_PASSWORD_COST"], !text.isEmpty {
            let costs = AuthService.Options.passwordCosts
            guard let cost = Int(text), costs.contains(cost) else {
                throw ValidationError("HEREABOUTS_AUTH_PASSWORD_COST must be scrypt's log2 N from \(costs.lowerBound) to \(costs.upperBound), not \(text)")
            }
            authOptions.passwordCost = cost
        }
        if authOptions.passwordCost < AuthService.Options.standardPasswordCost {
            // Said at every start, so a test setting that reached a real deployment shows in its log.
            logger.warning("new password hashes are cheaper than the standard: HEREABOUTS_AUTH_PASSWORD_COST=\(authOptions.passwordCost) (\(AuthService.Options.standardPasswordCost) unless set); fit for tests, not for real accounts")
        }
        let service = try AuthService(settings: settings, options: authOptions, logger: logger)
        try await ServiceHost.run([service], logger: logger)
    }
}
