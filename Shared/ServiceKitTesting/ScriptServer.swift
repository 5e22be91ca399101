import Foundation
import Spawn
import Wire

/// A stand-in server written in Python beside this file (`smtp_server.py`,
/// `push_server.py`): run with Debian's python3, ready when it prints its first line,
/// stopped by closing its stdin.
final class ScriptServer {
    private let process: SpawnedProcess
    private let input = Pipe()
    /// Kept open while the script runs: it may print after its first line, and a closed
    /// pipe would end it.
    private let output = Pipe()
    /// The line the script printed once listening (`READY …`).
    let readyLine: String

    /// - Parameter missing: what to say when the script does not start (the packages it needs).
    init(script name: String, arguments: [String], missing: String) throws {
        process = try SpawnedProcess("/usr/bin/python3", arguments: [Self.directory.appendingPathComponent(name).path] + arguments,
                                     environment: ProcessInfo.processInfo.environment,
                                     stdin: .pipe(input), stdout: .pipe(output), stderr: .null)
        readyLine = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard readyLine.hasPrefix("READY") else {
            stop()
            throw ServiceError(code: .internal, message: "\(name) did not start (\(missing))")
        }
    }

    deinit { stop() }

    func stop() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    private static var directory: URL { URL(fileURLWithPath: #filePath).deletingLastPathComponent() }

    /// A fresh directory under /tmp for one server's files.
    static func makeDirectory(_ prefix: String) throws -> URL {
        let directory = URL(fileURLWithPath: "/tmp/\(prefix)-\(Identifier.random(count: 8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A self-signed certificate for `localhost` and its key, in `directory`.
    static func selfSignedCertificate(in directory: URL) throws -> (certificate: URL, key: URL) {
        let certificate = directory.appendingPathComponent("cert.pem"), key = directory.appendingPathComponent("key.pem")
        try run("/usr/bin/openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key.path, "-out", certificate.path,
                                     "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost"])
        return (certificate, key)
    }

    static func run(_ executable: String, _ arguments: [String]) throws {
        guard try Spawn.run(executable, arguments: arguments, environment: ProcessInfo.processInfo.environment, stdout: .null) == 0 else {
            throw ServiceError(code: .internal, message: "\(executable) \(arguments.joined(separator: " ")) failed")
        }
    }

    static func freePort() throws -> Int {
        Int(try ChildProcess.freeEndpoint().split(separator: ":").last ?? "") ?? 0
    }
}
