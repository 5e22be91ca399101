import Contracts
import Foundation

/// What `here probe` asks: the process a container runs as its main process, found
/// from that process's own command line, reached over loopback. One health check
/// serves every container of the image (the image's `HEALTHCHECK`, and Compose's),
/// and it needs no name look-up: on some fresh starts those stall while the bridge
/// network settles, and a health check that waits on the network says nothing about
/// the process.
public enum ProbeTarget: Equatable, Sendable {
    /// A service: its `<service>.health` op at `endpoint` (tcp://127.0.0.1:port).
    case service(name: String, endpoint: String)
    /// The edge: `GET /health/ready` at `address` (127.0.0.1:port).
    case edge(address: String)

    /// The target of a command line such as `geo-service --endpoint tcp://0.0.0.0:7103`
    /// or `edge-service --listen 0.0.0.0:8080`. Flags left out fall back as the
    /// executables' own do: the environment, then the stack's default port.
    public static func from(commandLine: [String], environment: [String: String]) throws -> ProbeTarget {
        guard let executable = commandLine.first.map({ URL(fileURLWithPath: $0).lastPathComponent }),
              executable.hasSuffix("-service") else {
            throw GatewayError("the main process is not a Hereabouts service (its command is \(commandLine.joined(separator: " ")))")
        }
        let name = String(executable.dropLast("-service".count))
        func flag(_ flag: String) -> String? {
            for (index, argument) in commandLine.enumerated().dropFirst() {
                if argument == flag, index + 1 < commandLine.count { return commandLine[index + 1] }
                if argument.hasPrefix(flag + "=") { return String(argument.dropFirst(flag.count + 1)) }
            }
            return nil
        }
        if name == "edge" {
            let listen = EdgeAddress.listen(flag("--listen"), environment: environment)
            return .edge(address: "127.0.0.1:\(try port(of: listen))")
        }
        guard ServiceEndpoints.services.contains(name) else {
            throw GatewayError("\(executable) is not a service here knows (\(ServiceEndpoints.services.joined(separator: ", ")), edge)")
        }
        // Without --endpoint a replica binds the first of its service's list; only the port matters here.
        let endpoint = flag("--endpoint") ?? ServiceEndpoints.list(ServiceEndpoints.resolve(name, environment: environment).requests).first
            ?? ServiceEndpoints.defaultRequests(name)
        return .service(name: name, endpoint: "tcp://127.0.0.1:\(try port(of: endpoint))")
    }

    /// The number after the last colon of `tcp://host:port` or `host:port`.
    private static func port(of address: String) throws -> UInt16 {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]), port > 0 else {
            throw GatewayError("\(address) names no port")
        }
        return port
    }

    /// The command line of process `pid` (`/proc/<pid>/cmdline`: arguments ended by NUL).
    public static func commandLine(ofProcess pid: Int) throws -> [String] {
        guard let data = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline"), !data.isEmpty else {
            throw GatewayError("cannot read the command line of process \(pid)")
        }
        return data.split(separator: 0, omittingEmptySubsequences: true).map { String(decoding: $0, as: UTF8.self) }
    }
}
