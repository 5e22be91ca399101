import Foundation
import Synchronization
import ServiceClient
import Spawn
import Wire
import ZeroMQ

/// An executable of this package started as a child process (system tests,
/// benchmarks), with its output in a log file.
public final class ChildProcess {
    public let process: SpawnedProcess
    public let log: URL

    /// Where `swift build` put the executables: next to this test bundle, or
    /// `HEREABOUTS_BIN_DIR`.
    public static var binDirectory: URL {
        if let dir = ProcessInfo.processInfo.environment["HEREABOUTS_BIN_DIR"] {
            return URL(fileURLWithPath: dir)
        }
        var dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        // The test bundle may be a directory inside the build folder.
        while dir.path != "/" && !FileManager.default.fileExists(atPath: dir.appendingPathComponent("auth-service").path) {
            dir.deleteLastPathComponent()
        }
        return dir
    }

    /// What the tests' stacks add to their services' environment: password hashes at
    /// scrypt's lowest cost (~3 ms a hash instead of ~0.35 s), because the suite registers
    /// and logs in users by the hundred and the standard cost was ~12 % of its CPU.
    /// Not applied by `init` (benchmarks measure the real cost): a test that hashes
    /// through a service process merges it, and one about the cost itself (a flood of
    /// registrations against the hashing threads) leaves it out.
    public static let testSettings: [String: String] = ["HEREABOUTS_AUTH_PASSWORD_COST": "10"]

    public init(_ executable: String, arguments: [String], environment: [String: String] = [:], log: URL) throws {
        let path = Self.binDirectory.appendingPathComponent(executable)
        guard FileManager.default.isExecutableFile(atPath: path.path) else {
            throw ServiceError(code: .internal, message: "\(executable) is not built at \(path.path): run `swift build` first")
        }
        self.log = log
        // Spawned, not Foundation's `Process`, whose `run()` can crash a test process with
        // many descriptors open (see `Spawn`).
        process = try SpawnedProcess(path.path, arguments: arguments,
                                     environment: ProcessInfo.processInfo.environment.merging(environment) { $1 },
                                     stdout: .file(log.path, append: false))
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// Sends SIGTERM and waits for the exit; returns the seconds it took.
    @discardableResult
    public func terminate() -> TimeInterval {
        guard process.isRunning else { return 0 }
        let start = Date()
        process.terminate()
        process.waitUntilExit()
        return Date().timeIntervalSince(start)
    }

    public var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// A TCP endpoint on a port that was free a moment ago.
    ///
    /// Ports come from below Linux's ephemeral range (32768–60999 by default), one
    /// after another within this process: a port the kernel picked from that range
    /// (`:*`) could be taken, before the service binds it, as the local port of any
    /// outgoing connection, and the parallel system tests make thousands of those.
    public static func freeEndpoint() throws -> String {
        for _ in 0..<testPorts.count {
            let port = testPorts.lowerBound + (nextTestPort.wrappingAdd(1, ordering: .relaxed).oldValue % testPorts.count)
            let socket = try Context.shared.makeSocket(.router)
            defer { socket.close() }
            if (try? socket.bind("tcp://127.0.0.1:\(port)")) != nil { return "tcp://127.0.0.1:\(port)" }
        }
        throw ServiceError.unavailable("no free port in \(testPorts)")
    }

    private static let testPorts = 20_000..<32_000
    /// Where this process starts: apart from another test process's start, most likely.
    private static let nextTestPort = Atomic<Int>(Int.random(in: 0..<12_000))
}

/// Calls `health` until the service answers or `timeout` passes.
public func waitUntilHealthy(service: String, endpoint: String, timeout: TimeInterval = 20) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        let client = ServiceClient(service: service, endpoint: endpoint, timeout: 0.5, tries: 1)
        defer { client.close() }
        if (try? client.callRaw(op: "\(service).health", body: .object(JSONObject())))?.reply.result != nil {
            return true
        }
        Thread.sleep(forTimeInterval: 0.1)
    }
    return false
}
