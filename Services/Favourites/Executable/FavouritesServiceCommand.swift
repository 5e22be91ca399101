import ArgumentParser
import Favourites
import Foundation
import Logging
import ServiceKit

@main
struct FavouritesServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "favourites-service",
        abstract: "Hereabouts favourites: each user's saved posts, over ZeroMQ.",
        discussion: "Follows catalogue's and auth's change feeds. Stops cleanly on SIGTERM or SIGINT. Its data is <data dir>/favourites.sqlite.")

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        let settings = try ServiceSettings(service: "favourites", options: options)
        bootstrapLogging(level: settings.logLevel)
        let logger = Logger(label: "hereabouts.favourites")
        try await ServiceHost.run([try FavouritesService(settings: settings, logger: logger)], logger: logger)
    }
}
