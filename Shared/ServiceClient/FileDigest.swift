import Crypto
import Foundation

/// The SHA-256 of a file a service hands over (a backup's copy): the service says
/// it, and whoever collects the file checks it.
public enum FileDigest {
    /// The file's size and hex SHA-256, read a MiB at a time.
    public static func sha256(of file: URL) throws -> (bytes: Int64, hex: String) {
        let handle = try FileHandle(forReadingFrom: file)
        defer { try? handle.close() }
        var hasher = SHA256()
        var bytes: Int64 = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            hasher.update(data: chunk)
            bytes += Int64(chunk.count)
        }
        return (bytes, hasher.finalize().map { String(format: "%02x", $0) }.joined())
    }
}
