import Foundation
import Wire

/// The last 50 errors `here` met, kept across runs beside the session
/// (`errors.json`), for `here errors`.
public struct ErrorLog: Sendable {
    public struct Entry: Codable, Sendable, Equatable {
        public var at: Date
        public var command: String
        public var message: String
        public var exitCode: Int32
    }

    public static let capacity = 50
    public let url: URL

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        url = SessionFile(environment: environment).url.deletingLastPathComponent().appendingPathComponent("errors.json")
    }

    public func entries() -> [Entry] {
        guard let data = try? Data(contentsOf: url) else { return [] }
        return (try? JSONValueDecoder().decode([Entry].self, from: data)) ?? []
    }

    /// Adds one, dropping the oldest beyond 50. A log that cannot be written is
    /// not worth failing the command over.
    public func record(command: String, _ error: GatewayError, at instant: Date = Date()) {
        let entries = Array((entries() + [Entry(at: instant, command: command, message: error.message, exitCode: error.exitCode)])
            .suffix(Self.capacity))
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true,
                                                 attributes: [.posixPermissions: 0o700])
        try? JSONValueEncoder().encodeData(entries).write(to: url, options: .atomic)
    }
}
