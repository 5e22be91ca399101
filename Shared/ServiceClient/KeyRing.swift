import Foundation
import ZeroMQ

/// The CURVE keys of one component, from the directory `HEREABOUTS_KEYS_DIR` names:
/// `<component>.key` (Z85 public key) and `<component>.secret` (Z85 secret key, mode
/// 0600) for each of auth, catalogue, geo, favourites, chat, edge and here. A component
/// knows its own pair and everyone's public key: the public keys are both whom it
/// admits (as a server) and whom it trusts to be the service it calls (as a client).
public struct KeyRing: Sendable, Equatable {
    public static let environmentVariable = "HEREABOUTS_KEYS_DIR"
    /// The components whose keys may read change feeds and subscribe to any user's
    /// events: the five services, and the edge, which fans events out to their users.
    public static let services = ["auth", "catalogue", "geo", "favourites", "chat", "edge"]
    /// Keys that call ops but see only what a user's token shows them: `here`.
    public static let operators = ["here"]
    public static let components = services + operators

    public let component: String
    public let own: CurveKeyPair
    /// Component → public key, for every `*.key` in the directory.
    public let publicKeys: [String: String]

    /// The keys in `directory`; a missing or malformed own key is an error.
    public static func load(directory: URL, component: String) throws -> KeyRing {
        func read(_ name: String) throws -> String {
            let url = directory.appendingPathComponent(name)
            guard let text = try? String(contentsOf: url, encoding: .utf8) else {
                throw KeyRingError("cannot read \(url.path)")
            }
            let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard key.utf8.count == 40, Z85.decode(key)?.count == 32 else { throw KeyRingError("\(url.path) is not a Z85 key") }
            return key
        }
        let secret = try read("\(component).secret")
        let own = CurveKeyPair(publicKey: try CurveKeyPair.publicKey(forSecretKey: secret), secretKey: secret)
        var publicKeys: [String: String] = [:]
        let files = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for file in files where file.hasSuffix(".key") {
            publicKeys[String(file.dropLast(4))] = try read(file)
        }
        guard publicKeys[component] == own.publicKey else {
            throw KeyRingError("\(component).key does not belong to \(component).secret")
        }
        return KeyRing(component: component, own: own, publicKeys: publicKeys)
    }

    /// The keys `HEREABOUTS_KEYS_DIR` names, or nil (plaintext) when it is unset.
    public static func fromEnvironment(_ environment: [String: String], component: String) throws -> KeyRing? {
        guard let directory = environment[environmentVariable], !directory.isEmpty else { return nil }
        return try load(directory: URL(fileURLWithPath: directory), component: component)
    }

    /// Writes a new key pair for each component that has none yet; secrets are 0600.
    /// With `owner`, the directory and every pair in it (new or not) are given to that
    /// user and group: a container that runs as another user than the one who made
    /// the keys reads them where a bind mount keeps owner and mode (Compose's file
    /// secrets; its images run as 10001).
    public static func generate(into directory: URL, components: [String] = components,
                                owner: (uid: UInt32, gid: UInt32)? = nil) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        for component in components {
            let secret = directory.appendingPathComponent("\(component).secret")
            guard !FileManager.default.fileExists(atPath: secret.path) else { continue }
            let pair = try CurveKeyPair.generate()
            guard FileManager.default.createFile(atPath: secret.path, contents: Data((pair.secretKey + "\n").utf8),
                                                 attributes: [.posixPermissions: 0o600]) else {
                throw KeyRingError("cannot write \(secret.path)")
            }
            try Data((pair.publicKey + "\n").utf8).write(to: directory.appendingPathComponent("\(component).key"))
        }
        guard let owner else { return }
        let paths = [directory.path] + components.flatMap { component in
            ["secret", "key"].map { directory.appendingPathComponent("\(component).\($0)").path }
        }
        for path in paths where chown(path, owner.uid, owner.gid) != 0 {
            throw KeyRingError("cannot give \(path) to \(owner.uid):\(owner.gid): \(String(cString: strerror(errno)))"
                               + (getuid() == 0 ? "" : " (only root can)"))
        }
    }

    /// How this component's ROUTER and PUB sockets run.
    public var server: CurveRole { .server(secretKey: own.secretKey) }

    /// How this component connects to `service` (its ROUTER or its PUB socket).
    public func client(of service: String) throws -> CurveRole {
        guard let key = publicKeys[service] else { throw KeyRingError("no \(service).key among the keys") }
        return .client(own, serverKey: key)
    }

    /// The public keys a server admits: every component's.
    public var allowedKeys: [String] { publicKeys.values.sorted() }

    /// The public keys of the service components (`services`) found in the directory.
    public var serviceKeys: Set<String> {
        Set(Self.services.compactMap { publicKeys[$0] })
    }
}

public struct KeyRingError: Error, CustomStringConvertible, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}
