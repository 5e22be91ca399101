import Contracts
import Foundation
import GRDBSQLite

/// This process's memory as `health` reports it.
enum ProcessMemory {
    /// The resident set from `/proc/self/statm` (Linux), with SQLite's heap; nil elsewhere.
    static func current() -> MemoryUse? {
        guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
              let pages = statm.split(separator: " ").dropFirst().first.flatMap({ Int64($0) }) else { return nil }
        return MemoryUse(residentBytes: pages * Int64(sysconf(Int32(_SC_PAGESIZE))), sqliteBytes: sqlite3_memory_used())
    }
}
