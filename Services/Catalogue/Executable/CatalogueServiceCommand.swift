import ArgumentParser
import Catalogue
import Foundation
import Logging
import ServiceKit

@main
struct CatalogueServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalogue-service",
        abstract: "Hereabouts catalogue: posts, images, ratings and trips, over ZeroMQ.",
        discussion: "Follows auth's change feed. Stops cleanly on SIGTERM or SIGINT. Its data is <data dir>/catalogue.sqlite.")

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        let settings = try ServiceSettings(service: "catalogue", options: options)
        bootstrapLogging(level: settings.logLevel)
        let logger = Logger(label: "hereabouts.catalogue")
        try await ServiceHost.run([try CatalogueService(settings: settings, logger: logger)], logger: logger)
    }
}
