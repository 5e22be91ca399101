import ArgumentParser
import Contracts
import Foundation
import Gateway
import ServiceClient
import ZeroMQ


struct Probe: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "A container's health check: whether its main process answers, over loopback.",
        discussion: """
            Reads the command line of process 1 (a container's main process: auth-service, …, edge-service), \
            and asks it: a service its <service>.health op at 127.0.0.1 and the port of its --endpoint, the edge \
            GET /health/ready at the port of its --listen. Exits 0 when it answers, 2 when it does not, 1 when \
            process 1 is not a Hereabouts service. The image's HEALTHCHECK.
            """)

    @Option(help: "The process to probe (default 1, a container's main process).")
    var pid = 1

    @Option(help: "Seconds to wait for the answer.")
    var timeout: Double = 3

    func run() throws {
        let environment = ProcessInfo.processInfo.environment
        do {
            switch try ProbeTarget.from(commandLine: try ProbeTarget.commandLine(ofProcess: pid), environment: environment) {
            case .service(let name, let endpoint):
                let curve: CurveRole? = try Gateway.keysDirectory(environment)
                    .map { try KeyRing.load(directory: $0, component: "here").client(of: name) }
                let client = ServiceClient(service: name, endpoint: endpoint, timeout: timeout, tries: 1, curve: curve)
                defer { client.close() }
                guard let reply = try? client.call(HealthAPI.health(name), Empty()) else {
                    throw GatewayError("\(name) does not answer at \(endpoint)", exitCode: 2)
                }
                print("\(name) at \(endpoint): \(reply.status)")
            case .edge(let address):
                let status = HTTPProbe.status(of: "/health/ready", at: address, timeout: timeout)
                guard status == 200 else {
                    throw GatewayError("the edge at \(address) answers /health/ready with \(status.map(String.init) ?? "nothing")", exitCode: 2)
                }
                print("edge at \(address): ready")
            }
        } catch let failure as GatewayError {
            FileHandle.standardError.write(Data("here probe: \(failure.message)\n".utf8))
            throw ExitCode(failure.exitCode)
        }
    }
}
