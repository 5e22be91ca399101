import Contracts
import Foundation
import ServiceClient
import Spawn
import Synchronization
import Wire
#if canImport(Glibc)
import Glibc
#endif

/// `here up`: runs the services as child processes, restarts one that dies (at once
/// the first time, then after 1, 2, 4 … up to 30 s if it keeps dying; back to at
/// once when it has run for a minute), and stops them all, in reverse order, when asked.
public final class Supervisor: Sendable {
    public struct Configuration: Sendable {
        public var services: [String]
        /// Where the service executables are (beside `here` by default).
        public var executables: URL
        public var dataDirectory: URL
        /// The services' environment: endpoints, data directory, log level.
        public var environment: [String: String]
        public var startTimeout: TimeInterval = 60
        /// The longest wait before restarting a service that keeps dying.
        public var maxBackoff: TimeInterval = 30
        /// Where the edge listens (`host:port`), started after the services; nil leaves it out.
        public var edgeListen: String?
        /// Services run as more than one process (geo), and how many. Replica k > 0
        /// is the child `<service>-<k>`, with `HEREABOUTS_REPLICA=k`: it binds the
        /// k-th endpoint of the service's lists and keeps its own file.
        public var replicas: [String: Int] = [:]

        public init(services: [String], executables: URL, dataDirectory: URL, environment: [String: String]) {
            self.services = services
            self.executables = executables
            self.dataDirectory = dataDirectory
            self.environment = environment
        }
    }

    private struct Child: Sendable {
        var pid: pid_t = 0
        var startedAt = Date()
        /// The wait before the next restart: 0, then 1, 2, 4 … 30 s.
        var backoff: TimeInterval = 0
        var restarts = 0
    }

    /// Thrown by `start` when `stop` was called meanwhile (Ctrl-C during start-up).
    public struct Stopped: Error {}

    public let configuration: Configuration
    /// The children; `stopping` is set under the same lock, so no child is started
    /// after `stop` has read which to stop.
    private let children = Mutex<[String: Child]>([:])
    private let stopping = Atomic<Bool>(false)
    /// Held for the whole of a stop: a second caller waits until the first is done.
    private let stopLock = Mutex<Bool>(false)
    private let report: @Sendable (String) -> Void

    public init(_ configuration: Configuration, report: @escaping @Sendable (String) -> Void) {
        self.configuration = configuration
        self.report = report
    }

    /// Starts each service in order and waits until it answers `health`, then the
    /// edge; a child that does not answer is an error (its log says why).
    public func start() throws {
        try startServices()
        try startEdge()
    }

    /// Starts each service in order and waits until it answers `health`.
    public func startServices() throws {
        let logs = configuration.dataDirectory.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        for child in serviceChildren {
            try launch(child.name, executable: child.service, environment: child.environment)
            guard let health = waitForHealth(service: child.service, endpoint: child.endpoint) else {
                if stopping.load(ordering: .sequentiallyConsistent) { throw Stopped() }
                stop()
                throw GatewayError("\(child.name) did not answer within \(Int(configuration.startTimeout)) s; see \(logFile(child.name).path)"
                                   + lastLines(of: child.name), exitCode: 2)
            }
            let pid = children.withLock { $0[child.name]?.pid ?? 0 }
            report("\(child.name.padding(toLength: 11, withPad: " ", startingAt: 0))\(child.endpoint)  ready  v\(health.version)  pid \(pid)")
        }
    }

    /// Starts the edge, when there is to be one, with `environment` added to the
    /// stack's (what was learned after the services started, such as the operators).
    public func startEdge(environment: [String: String] = [:]) throws {
        if let listen = configuration.edgeListen {
            try launch(Self.edge, executable: Self.edge, environment: environment.merging(["HEREABOUTS_EDGE_LISTEN": listen]) { $1 })
            guard waitForEdge(listen) else {
                if stopping.load(ordering: .sequentiallyConsistent) { throw Stopped() }
                stop()
                throw GatewayError("the edge did not answer at \(listen) within \(Int(configuration.startTimeout)) s; see \(logFile(Self.edge).path)"
                                   + lastLines(of: Self.edge), exitCode: 2)
            }
            let pid = children.withLock { $0[Self.edge]?.pid ?? 0 }
            report("\(Self.edge.padding(toLength: 11, withPad: " ", startingAt: 0))http://\(listen)  ready  pid \(pid)")
        }
    }

    /// The edge's name among the children (its executable is `edge-service`).
    public static let edge = "edge"

    /// A service's process: the service itself, or one of its replicas.
    public struct ServiceChild: Sendable {
        /// `geo`, `geo-1`: its name among the children and its log's.
        public var name: String
        public var service: String
        public var replica: Int
        /// Where it answers.
        public var endpoint: String
        var environment: [String: String]
    }

    /// The services' processes in the order they start, a service's replicas after it.
    public var serviceChildren: [ServiceChild] {
        configuration.services.flatMap { service -> [ServiceChild] in
            let endpoints = ServiceEndpoints.list(ServiceEndpoints.resolve(service, environment: configuration.environment).requests)
            return (0..<max(1, configuration.replicas[service] ?? 1)).map { replica in
                ServiceChild(name: ServiceEndpoints.replicaName(service, replica), service: service, replica: replica,
                             endpoint: endpoints.dropFirst(replica).first ?? endpoints.first ?? service,
                             environment: ["HEREABOUTS_REPLICA": "\(replica)"])
            }
        }
    }

    /// The children in the order they start: the services, then the edge.
    private var components: [String] {
        serviceChildren.map(\.name) + (configuration.edgeListen == nil ? [] : [Self.edge])
    }

    /// Stops every child (SIGTERM, then SIGKILL after 10 s), last started first. May
    /// be called from any thread, also while `start` waits (which then throws
    /// `Stopped`); a second call waits for the first and does nothing more.
    public func stop() {
        stopLock.withLock { stopped in
            guard !stopped else { return }
            stopped = true
            let pids = children.withLock { children -> [(String, pid_t)] in
                stopping.store(true, ordering: .sequentiallyConsistent)
                return components.reversed().compactMap { service in children[service].map { (service, $0.pid) } }
            }
            for (service, pid) in pids where pid > 0 {
                kill(pid, SIGTERM)
                let deadline = Date().addingTimeInterval(10)
                while kill(pid, 0) == 0, Date() < deadline { usleep(20_000) }
                if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
                report("\(service) stopped")
            }
        }
    }

    public func restarts(of service: String) -> Int { children.withLock { $0[service]?.restarts ?? 0 } }

    public func pid(of service: String) -> pid_t? { children.withLock { $0[service]?.pid } }

    private func logFile(_ service: String) -> URL {
        configuration.dataDirectory.appendingPathComponent("logs").appendingPathComponent("\(service).log")
    }

    /// The end of a child's log, for the error that says it did not start: why it
    /// exited is usually there (a port taken, a setting refused), and a person reading
    /// the error, or a CI log that keeps nothing else, should not have to go looking.
    private func lastLines(of service: String, count: Int = 8) -> String {
        // Only the end is read: a log is appended to across starts and may be large.
        guard let file = try? FileHandle(forReadingFrom: logFile(service)) else { return "" }
        defer { try? file.close() }
        guard let size = try? file.seekToEnd(), size > 0 else { return "" }
        try? file.seek(toOffset: size - min(size, 8192))
        guard let data = try? file.readToEnd(), !data.isEmpty else { return "" }
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").suffix(count)
        return "; it ends:\n" + lines.map { "  " + $0 }.joined(separator: "\n")
    }

    /// Starts the child `service` (`geo-1`) from `<executable>-service`.
    private func launch(_ service: String, executable name: String, environment extra: [String: String] = [:]) throws {
        let executable = configuration.executables.appendingPathComponent("\(name)-service").path
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            throw GatewayError("\(executable) is missing: build the services (make release) or put them beside here", exitCode: 3)
        }
        let environment = configuration.environment.merging(extra) { $1 }
        let pid = try children.withLock { children -> pid_t in
            guard !stopping.load(ordering: .sequentiallyConsistent) else { throw Stopped() }
            // In a process group of its own, so a Ctrl-C in the terminal reaches `here`, which then
            // stops the services in order, rather than every service at once.
            let pid: pid_t
            do {
                pid = try Spawn.launch(executable, environment: environment, stdout: .file(logFile(service).path, append: true))
            } catch {
                throw GatewayError("\(error)", exitCode: 3)
            }
            var child = children[service] ?? Child()
            child.pid = pid
            child.startedAt = Date()
            children[service] = child
            return pid
        }
        // Each child has a watcher thread that reaps it and restarts it if it died.
        Thread.detachNewThread { [self] in
            let status = Spawn.wait(pid)
            guard !stopping.load(ordering: .sequentiallyConsistent) else { return }
            let delay = children.withLock { children -> TimeInterval in
                var child = children[service] ?? Child()
                if Date().timeIntervalSince(child.startedAt) >= 60 { child.backoff = 0 }
                let delay = child.backoff
                child.backoff = min(configuration.maxBackoff, max(1, child.backoff * 2))
                child.restarts += 1
                child.pid = 0
                children[service] = child
                return delay
            }
            report("\(service) exited (status \(status)); restarting" + (delay > 0 ? " in \(Int(delay)) s" : ""))
            if delay > 0 { Thread.sleep(forTimeInterval: delay) }
            guard !stopping.load(ordering: .sequentiallyConsistent) else { return }
            do {
                try launch(service, executable: name, environment: extra)
                report("\(service) restarted")
            } catch is Stopped {
                return
            } catch {
                report("\(service) could not be restarted: \(error)")
            }
        }
    }

    private func waitForEdge(_ listen: String) -> Bool {
        let deadline = Date().addingTimeInterval(configuration.startTimeout)
        while Date() < deadline, !stopping.load(ordering: .sequentiallyConsistent) {
            if HTTPProbe.status(of: "/health/live", at: listen) == 200 { return true }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return false
    }

    private func waitForHealth(service: String, endpoint: String) -> HealthReply? {
        let keys = try? Gateway.keysDirectory(configuration.environment).map { try KeyRing.load(directory: $0, component: "here") }
        let client = ServiceClient(service: service, endpoint: endpoint, timeout: 1, tries: 1, curve: try? keys?.client(of: service))
        defer { client.close() }
        let deadline = Date().addingTimeInterval(configuration.startTimeout)
        while Date() < deadline, !stopping.load(ordering: .sequentiallyConsistent) {
            if let reply = try? client.call(HealthAPI.health(service), Empty()) { return reply }
            Thread.sleep(forTimeInterval: 0.1)
        }
        return nil
    }
}
