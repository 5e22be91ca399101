import ArgumentParser
import Geo
import Foundation
import Logging
import ServiceKit

@main
struct GeoServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "geo-service",
        abstract: "Hereabouts geo: search by place, term and radius, over ZeroMQ.",
        discussion: "Follows catalogue's change feed. Stops cleanly on SIGTERM or SIGINT. Its data is <data dir>/geo.sqlite.")

    @OptionGroup var options: ServiceOptions

    func run() async throws {
        let settings = try ServiceSettings(service: "geo", options: options)
        bootstrapLogging(level: settings.logLevel)
        let logger = Logger(label: "hereabouts.geo")
        try await ServiceHost.run([try GeoService(settings: settings, logger: logger)], logger: logger)
    }
}
