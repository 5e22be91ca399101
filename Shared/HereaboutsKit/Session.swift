import Foundation

/// A signed-in user's tokens, as a session store keeps them between launches.
public struct Session: Codable, Sendable, Hashable {
    public var userId: String
    public var anonymous: Bool
    public var accessToken: String
    public var refreshToken: String
    /// When the access token stops working (the server's clock, less the request's time).
    public var accessTokenExpiresAt: Date

    public init(userId: String, anonymous: Bool, accessToken: String, refreshToken: String, accessTokenExpiresAt: Date) {
        self.userId = userId
        self.anonymous = anonymous
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.accessTokenExpiresAt = accessTokenExpiresAt
    }

    init(_ reply: Components.Schemas.Session, receivedAt: Date = Date()) {
        self.init(userId: reply.user.id, anonymous: reply.user.anonymous, accessToken: reply.accessToken,
                  refreshToken: reply.refreshToken,
                  accessTokenExpiresAt: receivedAt.addingTimeInterval(TimeInterval(reply.expiresIn)))
    }
}

/// Where the session lives between launches. HereaboutsKit calls it from one task at
/// a time; `save(nil)` is a sign-out.
public protocol SessionStore: Sendable {
    func load() throws -> Session?
    func save(_ session: Session?) throws
}

/// A session kept in memory only: gone when the process ends.
public final class MemorySessionStore: SessionStore, @unchecked Sendable {
    private let lock = NSLock()
    private var session: Session?

    public init(_ session: Session? = nil) {
        self.session = session
    }

    public func load() throws -> Session? {
        lock.withLock { session }
    }

    public func save(_ session: Session?) throws {
        lock.withLock { self.session = session }
    }
}

/// A session in a JSON file that only its owner may read or write (mode 0600): the
/// default on Linux, and for command-line tools.
public struct FileSessionStore: SessionStore {
    public let url: URL

    public init(url: URL) {
        self.url = url
    }

    /// `$XDG_CONFIG_HOME/hereabouts/sessions/<host>-<port>.json` (or under `~/.config`).
    public static func standard(for baseURL: URL) -> FileSessionStore {
        let environment = ProcessInfo.processInfo.environment
        let config = environment["XDG_CONFIG_HOME"].map { URL(fileURLWithPath: $0) }
            ?? FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".config")
        let name = "\(baseURL.host ?? "server")-\(baseURL.port.map(String.init) ?? baseURL.scheme ?? "http").json"
        return FileSessionStore(url: config.appendingPathComponent("hereabouts/sessions").appendingPathComponent(name))
    }

    public func load() throws -> Session? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        return try JSONDecoder().decode(Session.self, from: Data(contentsOf: url))
    }

    public func save(_ session: Session?) throws {
        guard let session else {
            if FileManager.default.fileExists(atPath: url.path) { try FileManager.default.removeItem(at: url) }
            return
        }
        let directory = url.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        // Written beside the file with 0600 from the start, then renamed over it: the
        // tokens are never readable by others, not even for a moment.
        let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: temporary.path, contents: try JSONEncoder().encode(session),
                                             attributes: [.posixPermissions: 0o600]) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: temporary.path])
        }
        if FileManager.default.fileExists(atPath: url.path) {
            _ = try FileManager.default.replaceItemAt(url, withItemAt: temporary)
        } else {
            try FileManager.default.moveItem(at: temporary, to: url)
        }
    }
}

#if canImport(Security)
import Security

/// A session in the Keychain (a generic password item, this device only): the default
/// on Apple platforms.
public struct KeychainSessionStore: SessionStore {
    public let service: String
    public let account: String

    public init(service: String = "hereabouts", account: String) {
        self.service = service
        self.account = account
    }

    public static func standard(for baseURL: URL) -> KeychainSessionStore {
        KeychainSessionStore(account: baseURL.absoluteString)
    }

    private var query: [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    public func load() throws -> Session? {
        var query = self.query
        query[kSecReturnData as String] = true
        query[kSecMatchLimit as String] = kSecMatchLimitOne
        var item: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw Self.failure(status) }
        return try JSONDecoder().decode(Session.self, from: data)
    }

    public func save(_ session: Session?) throws {
        let deleted = SecItemDelete(query as CFDictionary)
        guard deleted == errSecSuccess || deleted == errSecItemNotFound else { throw Self.failure(deleted) }
        guard let session else { return }
        var item = query
        item[kSecValueData as String] = try JSONEncoder().encode(session)
        item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let status = SecItemAdd(item as CFDictionary, nil)
        guard status == errSecSuccess else { throw Self.failure(status) }
    }

    private static func failure(_ status: OSStatus) -> NSError {
        NSError(domain: NSOSStatusErrorDomain, code: Int(status))
    }
}
#endif
