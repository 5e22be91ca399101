import Foundation
import Spawn

/// The peers the geo issue compares against, from Debian packages, started on
/// loopback in a scratch directory and stopped at the end.
enum Peers {
    /// A loopback TCP port that was free a moment ago (the peer takes it next).
    static func freePort() throws -> UInt16 {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer -> Int32 in
                guard bind(descriptor, pointer, length) == 0 else { return -1 }
                return getsockname(descriptor, pointer, &length)
            }
        }
        guard bound == 0 else { throw PeerError("no free port") }
        return UInt16(bigEndian: address.sin_port)
    }

    /// Runs a command, as `user` when we are root and a user is named (PostgreSQL
    /// refuses to run as root); throws with its output when it fails.
    ///
    /// Spawned rather than run by Foundation's `Process`, which learns of a child's exit
    /// from a socket the child inherits: `pg_ctl start` leaves a server holding it, and
    /// the wait would never end.
    @discardableResult
    static func run(_ path: String, _ arguments: [String], as user: String? = nil, log: URL? = nil) throws -> String {
        var argv = [path] + arguments
        if let user, getuid() == 0 { argv = ["/usr/sbin/runuser", "-u", user, "--"] + argv }
        let outputFile = log ?? FileManager.default.temporaryDirectory.appendingPathComponent("peer-\(UUID().uuidString).log")
        defer { if log == nil { try? FileManager.default.removeItem(at: outputFile) } }
        let status: Int32
        do {
            status = try Spawn.run(argv[0], arguments: Array(argv.dropFirst()), environment: ProcessInfo.processInfo.environment,
                                   stdout: .file(outputFile.path, append: false), ownGroup: false)
        } catch {
            throw PeerError(error.description)
        }
        let output = (try? String(contentsOf: outputFile, encoding: .utf8)) ?? ""
        guard status == 0 else {
            throw PeerError("\(argv.joined(separator: " ")) failed (status \(status)): \(output)")
        }
        return output
    }
}

/// `redis-server` without persistence, on a free port.
final class RedisPeer {
    let port: UInt16
    private let process: SpawnedProcess

    init(directory: URL) throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/redis-server") else {
            throw PeerError("redis-server is not installed (make bench-peers)")
        }
        port = try Peers.freePort()
        process = try SpawnedProcess("/usr/bin/redis-server",
                                     arguments: ["--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                                 "--dir", directory.path, "--daemonize", "no", "--loglevel", "warning"],
                                     environment: ProcessInfo.processInfo.environment, stdout: .null)
        for _ in 0..<100 {
            if (try? RedisConnection(port: port)) != nil { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw PeerError("redis-server did not start")
    }

    var version: String {
        (try? Peers.run("/usr/bin/redis-server", ["--version"]))?.split(separator: " ").first { $0.hasPrefix("v=") }.map(String.init) ?? "?"
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// A PostgreSQL 15 cluster with PostGIS in a scratch directory, trust auth on
/// loopback, stopped (and removed) at the end.
final class PostGISPeer {
    static let bin = "/usr/lib/postgresql/15/bin"
    let port: UInt16
    let directory: URL
    private var running = false

    init(directory: URL) throws {
        guard FileManager.default.isExecutableFile(atPath: "\(Self.bin)/postgres") else {
            throw PeerError("PostgreSQL 15 is not installed (make bench-peers)")
        }
        self.directory = directory
        port = try Peers.freePort()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        if getuid() == 0 {
            try Peers.run("/bin/chown", ["-R", "postgres:postgres", directory.path])
        }
        let data = directory.appendingPathComponent("data").path
        try Peers.run("\(Self.bin)/initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"], as: "postgres")
        try Peers.run("\(Self.bin)/pg_ctl", ["-D", data, "-l", directory.appendingPathComponent("postgres.log").path, "-w", "-o",
                                             "-p \(port) -k \(directory.path) -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=256MB -c max_connections=20",
                                             "start"], as: "postgres")
        running = true
    }

    func connect() throws -> PostgresConnection {
        try PostgresConnection(port: port, user: "postgres", database: "postgres")
    }

    /// A file the server can read (COPY FROM runs as the server's user).
    func readableFile(_ name: String) -> URL {
        directory.appendingPathComponent(name)
    }

    func grantRead(_ file: URL) throws {
        if getuid() == 0 { try Peers.run("/bin/chown", ["postgres:postgres", file.path]) }
    }

    func stop() {
        guard running else { return }
        running = false
        _ = try? Peers.run("\(Self.bin)/pg_ctl", ["-D", directory.appendingPathComponent("data").path, "-m", "fast", "-w", "stop"],
                           as: "postgres")
    }
}
