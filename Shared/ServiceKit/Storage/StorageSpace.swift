import Contracts
import Foundation
import GRDB
import Wire

/// The storage a service's file lives on: how much is free, and what a write that
/// found it full is answered.
///
/// A full disk is an operational state, not a bug: SQLite refuses the write
/// (`SQLITE_FULL`), rolls its transaction back and keeps the file intact, and the
/// service goes on answering reads. The caller hears `unavailable` (try again later)
/// with what to do, rather than `internal`.
public enum StorageSpace {
    /// The free and total bytes of the file system holding `path`, and the bytes of
    /// the file with its WAL; nil where the platform does not tell.
    public static func use(of path: String) -> StorageUse? {
        var stats = statvfs()
        let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
        guard statvfs(directory, &stats) == 0 else { return nil }
        let files = FileManager.default
        let fileBytes = [path, path + "-wal"].compactMap { try? files.attributesOfItem(atPath: $0)[.size] as? NSNumber }
            .reduce(Int64(0)) { $0 + $1.int64Value }
        return StorageUse(freeBytes: Int64(stats.f_bavail) * Int64(stats.f_frsize),
                          totalBytes: Int64(stats.f_blocks) * Int64(stats.f_frsize), fileBytes: fileBytes)
    }

    /// `unavailable` for a write refused because the storage (or the file's size
    /// limit) is full; nil for any other error.
    public static func fullError(_ error: any Error, service: String) -> ServiceError? {
        guard let database = error as? DatabaseError, database.resultCode == .SQLITE_FULL else { return nil }
        return ServiceError.unavailable("\(service)'s storage is full: it answers reads but refuses writes until space is freed",
                                        detail: database.message ?? "SQLITE_FULL")
    }
}
