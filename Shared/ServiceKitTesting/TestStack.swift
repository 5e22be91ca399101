import Contracts
import Foundation
import Logging
import ServiceClient
import ServiceKit
import Wire
import ZeroMQ

/// Runs services in this process for a test: each on its own `ipc://` endpoint in a
/// temporary directory that also holds their SQLite files, with the environment
/// pointing every service at the others.
///
/// Used on one thread (it hands out clients, which own sockets). Stop it at the end.
public final class TestStack {
    public let directory: URL
    /// `HEREABOUTS_DATA_DIR` and every service's endpoint variables.
    public let environment: [String: String]
    private var running: [any RunnableService] = []
    private var clients: [ServiceClient] = []

    public init() throws {
        // Unix socket paths are limited to 107 bytes: keep the directory short.
        directory = URL(fileURLWithPath: "/tmp/hb-\(Identifier.random(count: 10))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var environment = ["HEREABOUTS_DATA_DIR": directory.path]
        for service in ServiceEndpoints.services {
            environment[ServiceEndpoints.requestsVariable(service)] = "ipc://\(directory.path)/\(service).sock"
            environment[ServiceEndpoints.eventsVariable(service)] = "ipc://\(directory.path)/\(service)-events.sock"
        }
        self.environment = environment
    }

    deinit {
        stop()
    }

    /// Settings for `service` as its executable would resolve them here.
    public func settings(for service: String, workers: Int = 2) throws -> ServiceSettings {
        try ServiceSettings(service: service, overrides: .init(workers: workers), environment: environment)
    }

    /// Starts a service; it is stopped by `stop()`, in reverse order of starting.
    public func start(_ service: any RunnableService) throws {
        try service.start()
        running.append(service)
    }

    /// Stops one service started here (a crash or a restart, in a test), keeping the
    /// directory and its files.
    public func stop(_ service: any RunnableService) {
        service.stop()
        running.removeAll { ObjectIdentifier($0 as AnyObject) == ObjectIdentifier(service as AnyObject) }
    }

    /// A client of `service` with a short timeout and one try, so a test that
    /// expects no answer fails fast.
    public func client(_ service: String, timeout: TimeInterval = 5, tries: Int = 1) -> ServiceClient {
        let client = ServiceClient(service: service, endpoint: ServiceEndpoints.resolve(service, environment: environment).requests,
                                   timeout: timeout, tries: tries)
        clients.append(client)
        return client
    }

    public func endpoint(_ service: String) -> String {
        ServiceEndpoints.resolve(service, environment: environment).requests
    }

    public func eventsEndpoint(_ service: String) -> String? {
        ServiceEndpoints.resolve(service, environment: environment).events
    }

    /// Sends frames exactly as given from a DEALER socket, which adds the empty
    /// delimiter a REQ socket would unless `delimiter` is false; returns the reply's
    /// frames after the delimiter, or nil when none came within the timeout.
    public func exchangeRaw(_ service: String, frames: [Data], delimiter: Bool = true,
                            timeout: TimeInterval = 5) throws -> [Data]? {
        let socket = try Context.shared.makeSocket(.dealer)
        defer { socket.close() }
        try socket.set(.linger(milliseconds: 0))
        try socket.connect(endpoint(service))
        try socket.send(delimiter ? [Data()] + frames : frames)
        var poller = Poller()
        poller.addReadable(socket)
        guard try poller.poll(timeout: Int(timeout * 1000)) > 0, let reply = try socket.receiveMessage(wait: false) else {
            return nil
        }
        return delimiter ? Array(reply.dropFirst()) : reply
    }

    /// Stops every service started here and removes the directory.
    public func stop() {
        for client in clients { client.close() }
        clients.removeAll()
        for service in running.reversed() { service.stop() }
        running.removeAll()
        try? FileManager.default.removeItem(at: directory)
    }

    /// A logger for services under test: quiet unless `HEREABOUTS_TEST_LOG` names a level.
    public static func logger(_ label: String) -> Logger {
        var logger = Logger(label: label) { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = ProcessInfo.processInfo.environment["HEREABOUTS_TEST_LOG"]
                .flatMap { Logger.Level(rawValue: $0) } ?? .critical
            return handler
        }
        logger.logLevel = ProcessInfo.processInfo.environment["HEREABOUTS_TEST_LOG"]
            .flatMap { Logger.Level(rawValue: $0) } ?? .critical
        return logger
    }
}
