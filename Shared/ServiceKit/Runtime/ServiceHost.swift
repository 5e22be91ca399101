import Foundation
import Logging
import ServiceLifecycle

/// What a service library hands its executable: something to start and stop.
public protocol RunnableService: Sendable {
    /// Binds sockets and starts threads; throws when the service cannot run.
    func start() throws
    /// Answers what was received, closes everything; returns within about a second.
    func stop()
    /// Answers one request in this process with no socket (see `Server.answer`):
    /// how the fuzzer drives a service.
    func answer(_ frames: [Data]) -> [Data]
    /// The ops it answers, `health` and `ready` included, by name.
    var ops: [String] { get }
}

/// Runs services until SIGTERM or SIGINT, then stops them in reverse order.
public enum ServiceHost {
    public static func run(_ services: [any RunnableService], logger: Logger) async throws {
        // Whatever a service makes (its files, the logs of those it starts) is its own.
        umask(0o077)
        let group = ServiceGroup(
            services: [Lifecycle(services: services)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger)
        try await group.run()
    }

    private struct Lifecycle: Service {
        let services: [any RunnableService]

        func run() async throws {
            var started: [any RunnableService] = []
            defer { for service in started.reversed() { service.stop() } }
            for service in services {
                try service.start()
                started.append(service)
            }
            // Cancellation (a second signal) ends the wait like a graceful shutdown.
            try? await gracefulShutdown()
        }
    }
}
