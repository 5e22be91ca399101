import Foundation
import Wire

/// `<service>.backup`: a consistent copy of the service's file, taken while it
/// serves. The service writes it itself (`VACUUM INTO` on a connection of its own),
/// so no other process ever reads its file; `here backup` collects the copies.
public enum BackupAPI {
    public static func backup(_ service: String) -> Op<BackupRequest, BackupReply> {
        Op("\(service).backup", access: .anyone, effect: .read)
    }

    /// The services in the order a backup takes them: each follower before the
    /// sources it follows, so that no restored follower is ahead of its source.
    public static let order = ["geo", "favourites", "chat", "catalogue", "auth"]
}

/// Where the copy goes: `<data dir>/backups/<name>/<service>.sqlite`, beside the
/// service's own file. A name, not a path: the op never writes anywhere else.
public struct BackupRequest: ValidatedBody, Equatable {
    public var name: String

    public init(name: String) { self.name = name }

    public func validate() throws {
        guard (1...64).contains(name.utf8.count), name.utf8.first != UInt8(ascii: "."),
              name.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x2D || $0 == 0x5F || $0 == 0x2E })
        else {
            throw ServiceError.invalidArgument(field: "name", "a backup's name is 1–64 letters, digits, '-', '_' or '.', not starting with '.'")
        }
    }
}

/// The copy, as `here backup` writes it into its manifest.
public struct BackupReply: Codable, Sendable, Equatable {
    public var service: String
    /// The copy's absolute path on the service's machine.
    public var file: String
    public var bytes: Int64
    /// Hex SHA-256 of the copy.
    public var sha256: String
    /// The highest seq of the service's change feed in the copy (0 when it has none).
    public var feedSeq: Int64
    /// How far the copy had applied each feed the service follows.
    public var cursors: [String: Int64]
    public var takenAt: Date

    public init(service: String, file: String, bytes: Int64, sha256: String, feedSeq: Int64, cursors: [String: Int64], takenAt: Date) {
        self.service = service
        self.file = file
        self.bytes = bytes
        self.sha256 = sha256
        self.feedSeq = feedSeq
        self.cursors = cursors
        self.takenAt = takenAt
    }
}
