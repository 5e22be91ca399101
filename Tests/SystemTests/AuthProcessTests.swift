import Contracts
import Foundation
import GRDB
import ServiceClient
import ServiceKitTesting
import TestThreads
import Testing
import Wire

@Suite("The auth-service executable", .serialized, .ownThread)
struct AuthProcessTests {
    @Test("it starts, serves accounts, stops on SIGTERM, and keeps its users and key across a restart; HEREABOUTS_AUTH_PASSWORD_COST sets new hashes' cost, and a login renews an older one")
    func lifecycle() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-sys-\(Identifier.random(count: 8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let endpoint = try ChildProcess.freeEndpoint()
        let events = try ChildProcess.freeEndpoint()
        let arguments = ["--endpoint", endpoint, "--events", events, "--log-level", "info"]
        // The data directory comes from the environment, as `here up` passes it.
        let environment = ["HEREABOUTS_DATA_DIR": directory.path]

        // The first start hashes at a cost below the standard, and says so.
        let first = try ChildProcess("auth-service", arguments: arguments,
                                       environment: environment.merging(["HEREABOUTS_AUTH_PASSWORD_COST": "11"]) { $1 },
                                       log: directory.appendingPathComponent("auth-1.log"))
        #expect(waitUntilHealthy(service: "auth", endpoint: endpoint), "\(first.logText)")
        let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 30, tries: 1)
        defer { client.close() }
        let session = try client.call(AuthAPI.register, RegisterRequest(email: "sys@example.org", password: "password1"))
        #expect(try client.call(AuthAPI.me, Empty(), token: session.accessToken).user.email == "sys@example.org")

        let seconds = first.terminate()
        #expect(first.process.terminationStatus == 0, "\(first.logText)")
        #expect(seconds < 5, "SIGTERM took \(seconds) s")
        #expect(first.logText.contains("auth stopped"))
        #expect(first.logText.contains("HEREABOUTS_AUTH_PASSWORD_COST=11") && first.logText.contains("not for real accounts"),
                "\(first.logText)")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("auth.sqlite").path))

        let second = try ChildProcess("auth-service", arguments: arguments, environment: environment,
                                        log: directory.appendingPathComponent("auth-2.log"))
        defer { second.terminate() }
        #expect(waitUntilHealthy(service: "auth", endpoint: endpoint), "\(second.logText)")
        client.close()
        // The same signing key: the token from before the restart still works.
        #expect(try client.call(AuthAPI.me, Empty(), token: session.accessToken).user.id == session.user.id)
        // The second start has the standard cost and says nothing of it. The first hash
        // kept its own cost until its account signed in; that login made it again at the
        // standard, and a new account's hash has the standard too.
        #expect(!second.logText.contains("HEREABOUTS_AUTH_PASSWORD_COST"), "\(second.logText)")
        let database = try DatabaseQueue(path: directory.appendingPathComponent("auth.sqlite").path)
        func hash(of email: String) throws -> String? {
            try database.read { try String.fetchOne($0, sql: "SELECT password_hash FROM user WHERE email = ?", arguments: [email]) }
        }
        #expect(try hash(of: "sys@example.org")?.hasPrefix("$scrypt$ln=11,r=8,p=1$") == true)
        let login = try client.call(AuthAPI.login, LoginRequest(login: "sys@example.org", password: "password1"))
        #expect(login.user.id == session.user.id)
        #expect(try hash(of: "sys@example.org")?.hasPrefix("$scrypt$ln=17,r=8,p=1$") == true)
        #expect(try client.call(AuthAPI.login, LoginRequest(login: "sys@example.org", password: "password1")).user.id
                    == session.user.id, "the renewed hash verifies")
        _ = try client.call(AuthAPI.register, RegisterRequest(email: "later@example.org", password: "password1"))
        #expect(try hash(of: "later@example.org")?.hasPrefix("$scrypt$ln=17,r=8,p=1$") == true)
    }

    @Test("bad flags are refused with a message and a non-zero exit")
    func badFlags() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("hb-flags-\(Identifier.random(count: 6))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let process = try ChildProcess("auth-service", arguments: ["--workers", "lots"],
                                         log: directory.appendingPathComponent("flags.log"))
        process.process.waitUntilExit()
        #expect(process.process.terminationStatus != 0)
        #expect(process.logText.contains("workers"))
        for cost in ["9", "21", "cheap"] {
            let refused = try ChildProcess("auth-service", arguments: ["--data-dir", directory.path],
                                           environment: ["HEREABOUTS_AUTH_PASSWORD_COST": cost],
                                           log: directory.appendingPathComponent("cost-\(cost).log"))
            refused.process.waitUntilExit()
            #expect(refused.process.terminationStatus != 0)
            #expect(refused.logText.contains("HEREABOUTS_AUTH_PASSWORD_COST must be scrypt's log2 N from 10 to 20, not \(cost)"),
                    "\(refused.logText)")
        }
    }
}
