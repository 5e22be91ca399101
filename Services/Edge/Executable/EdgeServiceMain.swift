import ArgumentParser
import Edge
import Foundation
import Logging
import ServiceCore

@main
struct EdgeServiceCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "edge-service",
        abstract: "Hereabouts' edge: HTTP and WebSocket for apps and browsers, in front of the five services.",
        discussion: """
            Settings come from HEREABOUTS_EDGE_* (LISTEN, METRICS_LISTEN, CORS_ORIGINS, TRUSTED_PROXIES, TLS_CERT, TLS_KEY, \
            RATE_LIMIT, MAX_SOCKETS, MAX_SOCKETS_PER_USER, MAX_SOCKETS_PER_ADDRESS, OPERATORS, HEADER_TIMEOUT, BODY_TIMEOUT, \
            SERVICE_TIMEOUT), the services' endpoints from \
            HEREABOUTS_<SVC>_ENDPOINT and _EVENTS, CurveZMQ keys from HEREABOUTS_KEYS_DIR (edge.key, edge.secret). \
            Stops cleanly on SIGTERM or SIGINT. It keeps no file.
            """)

    @Option(help: "host:port to listen on (default: HEREABOUTS_EDGE_LISTEN, else 127.0.0.1:8080).")
    var listen: String?

    func run() async throws {
        let settings = try EdgeSettings(listen: listen)
        bootstrapLogging(level: settings.logLevel)
        let logger = Logger(label: "hereabouts.edge")
        let edge = try EdgeService(settings: settings, logger: logger)
        try await edge.run()
    }
}
