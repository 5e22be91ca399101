import Contracts
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Wire

/// The signed-in session, kept between runs in
/// `$XDG_CONFIG_HOME/hereabouts/session.json` (default `~/.config/…`), mode 0600:
/// it holds tokens.
public struct Session: Codable, Sendable, Equatable {
    public var userId: String
    public var anonymous: Bool
    public var accessToken: String
    public var refreshToken: String
    /// When the access token expires.
    public var expiresAt: Date

    public init(userId: String, anonymous: Bool, accessToken: String, refreshToken: String, expiresAt: Date) {
        self.userId = userId
        self.anonymous = anonymous
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresAt = expiresAt
    }

    public init(_ reply: SessionReply, now: Date = Date()) {
        self.init(userId: reply.user.id, anonymous: reply.user.anonymous, accessToken: reply.accessToken,
                  refreshToken: reply.refreshToken, expiresAt: now.addingTimeInterval(TimeInterval(reply.expiresIn)))
    }
}

public struct SessionFile: Sendable {
    public let url: URL

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let base: URL
        if let config = environment["XDG_CONFIG_HOME"], !config.isEmpty {
            base = URL(fileURLWithPath: config)
        } else {
            let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
            base = URL(fileURLWithPath: home).appendingPathComponent(".config")
        }
        url = base.appendingPathComponent("hereabouts").appendingPathComponent("session.json")
    }

    public func load() -> Session? {
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONValueDecoder().decode(Session.self, from: data)
    }

    /// Written to a new file made 0600 before any byte goes in, then moved over.
    public func save(_ session: Session) throws {
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let temporary = directory.appendingPathComponent(".session-\(Identifier.random(count: 8))")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw GatewayError("cannot write \(temporary.path)", exitCode: 3)
        }
        let handle = try FileHandle(forWritingTo: temporary)
        try handle.write(contentsOf: try JSONValueEncoder().encodeData(session))
        try handle.close()
        // rename(2) replaces the old file in one step, or puts the first one in place.
        guard rename(temporary.path, url.path) == 0 else {
            try? FileManager.default.removeItem(at: temporary)
            throw GatewayError("cannot write \(url.path): \(String(cString: strerror(errno)))", exitCode: 3)
        }
    }

    public func remove() {
        try? FileManager.default.removeItem(at: url)
    }
}
