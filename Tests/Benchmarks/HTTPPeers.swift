import Foundation
import Spawn

/// wrk (Debian's) as the HTTP load generator: keep-alive connections, a Lua script
/// that cycles through the given paths, and wrk's own count of failed answers.
enum Wrk {
    struct Result {
        var requests: Int
        var seconds: Double
        var p50: Double
        var p99: Double
        /// Answers of 400 and over, and socket errors.
        var errors: Int

        var rate: Double { Double(requests) / seconds }
    }

    /// A script cycling through `paths`, each thread from its own place in them.
    static func script(paths: [String], headers: [String: String] = [:], in directory: URL, name: String) throws -> URL {
        let quoted = paths.map { "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        let headerLines = headers.map { "wrk.headers[\"\($0.key)\"] = \"\($0.value)\"" }.joined(separator: "\n")
        let text = """
            local paths = {
            \(quoted.joined(separator: ",\n"))
            }
            \(headerLines)
            local threads = {}
            function setup(thread)
              thread:set("offset", #threads * 997)
              table.insert(threads, thread)
            end
            -- Each request written once, at the start: the load generator shares the cores with
            -- what it measures. No response(): with one, wrk hands every answer's headers and
            -- body to Lua (about 4 µs of its CPU a request here, against 2 for all of its Lua
            -- without); failed answers are wrk's own count (errors.status: 400 and over).
            local requests = {}
            function init(args)
              counter = offset
              for i, path in ipairs(paths) do requests[i] = wrk.format("GET", path) end
            end
            function request()
              counter = counter + 1
              return requests[(counter % #requests) + 1]
            end
            function done(summary, latency, requests)
              local e = summary.errors
              io.write(string.format("WRK requests=%d duration=%d p50=%d p99=%d bad=%d socket=%d\\n", summary.requests,
                summary.duration, latency:percentile(50), latency:percentile(99), e.status,
                e.connect + e.read + e.write + e.timeout))
            end
            """
        let file = directory.appendingPathComponent("\(name).lua")
        try text.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    /// Runs wrk for `seconds` with `connections` keep-alive connections on `threads` threads.
    static func run(url: String, script: URL, seconds: Int, connections: Int = 4, threads: Int = 2) throws -> Result {
        let output = try Peers.run("/usr/bin/wrk", ["-t\(threads)", "-c\(connections)", "-d\(seconds)s", "-s", script.path, url])
        guard let line = output.split(separator: "\n").first(where: { $0.hasPrefix("WRK ") }) else {
            throw PeerError("wrk said: \(output)")
        }
        var fields: [String: Double] = [:]
        for pair in line.dropFirst(4).split(separator: " ") {
            let parts = pair.split(separator: "=")
            if parts.count == 2 { fields[String(parts[0])] = Double(parts[1]) }
        }
        guard let requests = fields["requests"], let duration = fields["duration"] else { throw PeerError("wrk said: \(output)") }
        return Result(requests: Int(requests), seconds: duration / 1_000_000, p50: (fields["p50"] ?? .nan) / 1000,
                      p99: (fields["p99"] ?? .nan) / 1000, errors: Int((fields["bad"] ?? 0) + (fields["socket"] ?? 0)))
    }

    static var version: String {
        ((try? Peers.run("/usr/bin/wrk", ["-v"])) ?? "").split(separator: "\n").first.map(String.init) ?? "wrk"
    }
}

/// Debian's nginx as one process (no master, one worker) under `root`, with `http`
/// inside its `http { }` block; its temporary files under `root` too.
final class NginxProcess {
    private let process: SpawnedProcess

    init(root: URL, http: String) throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let configuration = """
            daemon off;
            master_process off;
            worker_processes 1;
            error_log \(root.path)/error.log;
            pid \(root.path)/nginx.pid;
            events { worker_connections 1024; }
            http {
              client_body_temp_path \(root.path)/body;
              proxy_temp_path \(root.path)/proxy;
              fastcgi_temp_path \(root.path)/fastcgi;
              uwsgi_temp_path \(root.path)/uwsgi;
              scgi_temp_path \(root.path)/scgi;
            \(http)
            }
            """
        let file = root.appendingPathComponent("nginx.conf")
        try configuration.write(to: file, atomically: true, encoding: .utf8)
        process = try SpawnedProcess("/usr/sbin/nginx", arguments: ["-c", file.path, "-p", root.path],
                                     environment: ProcessInfo.processInfo.environment, stdout: .null)
        Thread.sleep(forTimeInterval: 0.5)
        guard process.isRunning else { throw PeerError("nginx did not start: see \(root.path)/error.log") }
    }

    static var version: String {
        ((try? Peers.run("/usr/sbin/nginx", ["-v"])) ?? "nginx").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Its CPU time so far (one process: `master_process off`).
    var cpuSeconds: Double { ProcessCPU.seconds(process.processIdentifier) ?? 0 }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// nginx serving one static file on loopback: the HTTP floor on this machine.
final class NginxPeer {
    let port: UInt16
    private let nginx: NginxProcess

    init(directory: URL, file: Data, name: String) throws {
        port = try Peers.freePort()
        let root = directory.appendingPathComponent("nginx")
        try FileManager.default.createDirectory(at: root.appendingPathComponent("static"), withIntermediateDirectories: true)
        try file.write(to: root.appendingPathComponent("static/\(name)"))
        nginx = try NginxProcess(root: root, http: """
              access_log off;
              keepalive_requests 1000000;
              server {
                listen 127.0.0.1:\(port);
                root \(root.path)/static;
                location / { default_type application/json; }
              }
            """)
    }

    static var version: String { NginxProcess.version }

    func stop() {
        nginx.stop()
    }
}

/// A process's CPU time (user and system) so far, from /proc: the edge's cost per request.
enum ProcessCPU {
    static func seconds(_ pid: Int32) -> Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
        // utime and stime are fields 14 and 15 of the line, 12 and 13 after the command.
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// Resident memory, from /proc.
    static func residentBytes(_ pid: Int32) -> Int? {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = line.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { return nil }
        return kilobytes * 1024
    }
}
