import Contracts
import Foundation
import GRDB
import ServiceClient
import Wire

extension ServiceDatabase {
    /// A consistent copy of the file while it serves, into `<backups>/<name>/<service>.sqlite`
    /// (`backups`: `HEREABOUTS_BACKUP_DIR`, else `<data dir>/backups`; 0600, its directories 0700).
    ///
    /// `VACUUM INTO` on a read-only connection of its own reads one snapshot, beside
    /// the writer (WAL mode: writes go on), and writes a compact file. The copy is
    /// made as `.part` and renamed once complete, so a file under its final name is
    /// whole; asked again for the same name (a retried request), the finished copy is
    /// described again rather than made twice.
    public func backup(name: String, service: String, now: Date = Date()) throws -> BackupReply {
        let directory = backups.appendingPathComponent(name, isDirectory: true)
        let target = directory.appendingPathComponent("\(service).sqlite")
        let files = FileManager.default
        Self.prune(backups, keeping: name, now: now)
        if !files.fileExists(atPath: target.path) {
            try files.createDirectory(at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            let part = target.path + ".part"
            try? files.removeItem(atPath: part)
            var configuration = Configuration()
            configuration.readonly = true
            configuration.label = "backup"
            try DatabaseQueue(path: path, configuration: configuration).inDatabase { db in
                try db.execute(sql: "VACUUM INTO ?", arguments: [part])
            }
            // The copy's feed is a history of its own from here, named by the backup:
            // a live follower of a file restored from it sees another epoch and replays
            // its feed (`ChangeFollower`), however many writes the restored file takes
            // first. The copy's cursors count in the same epoch, for `here backup` copies
            // every service under one name: a whole set restored together follows on
            // from its cursors without a replay.
            try DatabaseQueue(path: part).inDatabase { db in
                try db.execute(sql: "UPDATE feed_epoch SET epoch = ?", arguments: ["backup-\(name)"])
                try db.execute(sql: "UPDATE feed_cursor SET epoch = ?", arguments: ["backup-\(name)"])
            }
            try files.setAttributes([.posixPermissions: 0o600], ofItemAtPath: part)
            try files.moveItem(atPath: part, toPath: target.path)
        }
        return try Self.describe(backup: target, service: service, takenAt: now)
    }

    /// Copies are for `here backup` to take away at once (it moves each): a named
    /// copy left behind (a backup that failed half-way, a call by hand) is removed
    /// once it is an hour old, and at most `keptCopies` others are kept, so copies
    /// never fill the disk the service writes to.
    static let keptCopies = 3
    static let copyLifetime: TimeInterval = 3_600

    static func prune(_ backups: URL, keeping name: String, now: Date) {
        let files = FileManager.default
        guard let names = try? files.contentsOfDirectory(atPath: backups.path) else { return }
        let others = names.filter { $0 != name }.compactMap { other -> (URL, Date)? in
            let url = backups.appendingPathComponent(other, isDirectory: true)
            guard let modified = (try? files.attributesOfItem(atPath: url.path))?[.modificationDate] as? Date else { return nil }
            return (url, modified)
        }.sorted { $0.1 > $1.1 }
        for (index, (url, modified)) in others.enumerated()
        where index >= keptCopies || now.timeIntervalSince(modified) > copyLifetime {
            try? files.removeItem(at: url)
        }
    }

    /// What a copy holds: its size, SHA-256, its feed's last seq and its cursors.
    static func describe(backup file: URL, service: String, takenAt: Date) throws -> BackupReply {
        var configuration = Configuration()
        configuration.readonly = true
        let (feedSeq, cursors) = try DatabaseQueue(path: file.path, configuration: configuration).read { db in
            let seq = try Int64.fetchOne(db, sql: "SELECT MAX(seq) FROM change") ?? 0
            let rows = try Row.fetchAll(db, sql: "SELECT feed, seq FROM feed_cursor")
            return (seq, Dictionary(rows.map { ($0["feed"] as String, $0["seq"] as Int64) }, uniquingKeysWith: { $1 }))
        }
        let (bytes, digest) = try FileDigest.sha256(of: file)
        return BackupReply(service: service, file: file.path, bytes: bytes, sha256: digest, feedSeq: feedSeq,
                           cursors: cursors, takenAt: takenAt)
    }
}
