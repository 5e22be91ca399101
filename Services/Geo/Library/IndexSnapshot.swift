import Contracts
import CZlib
import Foundation
import Wire
#if canImport(Glibc)
import Glibc
#endif

/// A binary copy of the post index, written when geo stops and while it runs
/// (`SnapshotKeeper`), and read when it starts, so that a restart of a million posts
/// reads one file and the rows changed after it instead of rebuilding the index from
/// every row of geo's database.
///
/// The file is a run of sections (a length, then that many bytes, padded to eight)
/// between a header and a CRC-32 of everything before it. It is only ever read by
/// the same build that wrote it (the header names the build and the sizes of the
/// records it holds), and only beside the database it names (`GeoStore.snapshotStamp`:
/// the file's id and its catalogue cursor's epoch), at a feed position the database
/// has reached.
enum IndexSnapshot {
    /// Version 2 keeps the points of opening hours that depend on the place.
    static let magic = Array("HBGEOIX2".utf8)
    /// Raised whenever what `PostIndex.writeSnapshot` writes changes.
    static let format: UInt32 = 2

    /// Beside the database: `geo.sqlite` → `geo.index`.
    static func path(forDatabase databasePath: String) -> String {
        (databasePath.hasSuffix(".sqlite") ? String(databasePath.dropLast(".sqlite".count)) : databasePath) + ".index"
    }

    /// What a file must say of the build that reads it.
    static var build: String {
        "\(HereaboutsVersion.current) format \(format) record \(MemoryLayout<PostRecord>.stride) point \(MemoryLayout<TreePoint>.stride) node \(MemoryLayout<KDTree.Node>.stride)"
    }

    /// A file that is not one this build wrote, or not whole.
    struct Unreadable: Error, CustomStringConvertible {
        var description: String
    }

    /// A file that could not be written (the disk, its permissions).
    struct Unwritable: Error, CustomStringConvertible {
        var description: String
    }
}

/// Writes a snapshot to a temporary file and renames it into place once complete.
final class SnapshotWriter {
    private let descriptor: Int32
    private let temporaryPath: String
    private let path: String
    private var crc: UInt = crc32(0, nil, 0)
    private var failed = false
    private var closed = false

    init(path: String) throws {
        self.path = path
        temporaryPath = path + ".partial"
        descriptor = open(temporaryPath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw IndexSnapshot.Unwritable(description: "could not create \(temporaryPath): errno \(errno)") }
        write(bytes: IndexSnapshot.magic)
        write(string: IndexSnapshot.build)
    }

    deinit {
        // Not finished (an error on the way): the partial file goes.
        if !closed {
            close(descriptor)
            unlink(temporaryPath)
        }
    }

    private func writeRaw(_ buffer: UnsafeRawBufferPointer) {
        guard !failed, buffer.count > 0, let base = buffer.baseAddress else { return }
        crc = base.withMemoryRebound(to: UInt8.self, capacity: buffer.count) { bytes in
            var crc = self.crc
            var offset = 0
            while offset < buffer.count {
                let step = min(buffer.count - offset, Int(UInt32.max))
                crc = crc32(crc, bytes + offset, UInt32(step))
                offset += step
            }
            return crc
        }
        var offset = 0
        while offset < buffer.count {
            let written = Glibc.write(descriptor, base + offset, buffer.count - offset)
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { failed = true; return }
            offset += written
        }
    }

    /// A section: its byte count, its bytes, zeros to the next multiple of eight.
    func write<T: BitwiseCopyable>(array: [T]) {
        write(section: [array])
    }

    /// One section of the lists' elements back to back, written list by list (an
    /// arena's chunks are not copied into one array first).
    private func write<T: BitwiseCopyable>(section lists: [[T]]) {
        let bytes = lists.reduce(0) { $0 + $1.count } * MemoryLayout<T>.stride
        var count = UInt64(bytes)
        withUnsafeBytes(of: &count) { writeRaw($0) }
        for list in lists { list.withUnsafeBytes { writeRaw($0) } }
        let padding = (8 - bytes % 8) % 8
        if padding > 0 {
            let zeros = [UInt8](repeating: 0, count: padding)
            zeros.withUnsafeBytes { writeRaw($0) }
        }
    }

    func write(bytes: [UInt8]) { write(array: bytes) }

    func write(int value: Int) { write(array: [Int64(value)]) }

    func write(string: String) { write(bytes: Array(string.utf8)) }

    /// Strings as one section of lengths and one of their bytes back to back.
    func write(strings: [String]) {
        write(array: strings.map { UInt32($0.utf8.count) })
        var bytes: [UInt8] = []
        bytes.reserveCapacity(strings.reduce(0) { $0 + $1.utf8.count })
        for string in strings { bytes.append(contentsOf: string.utf8) }
        write(bytes: bytes)
    }

    /// Arrays of arrays as one section of counts and one of their elements back to back.
    func write<T: BitwiseCopyable>(nested: [[T]]) {
        write(array: nested.map { UInt64($0.count) })
        write(section: nested)
    }

    /// Ends the file with its CRC and puts it in place. Not synced to disk: that
    /// would hold up stopping by seconds, and a file a power cut left partly
    /// written fails its CRC and is not used.
    func finish() throws {
        var crc = UInt64(self.crc)
        withUnsafeBytes(of: &crc) { buffer in
            guard let base = buffer.baseAddress else { return }
            if Glibc.write(descriptor, base, 8) != 8 { failed = true }
        }
        closed = true
        close(descriptor)
        guard !failed, rename(temporaryPath, path) == 0 else {
            unlink(temporaryPath)
            throw IndexSnapshot.Unwritable(description: "could not write \(path): errno \(errno)")
        }
    }
}

/// Reads a snapshot written by `SnapshotWriter`, every read checked against the
/// file's end; throws `Unreadable` for a file of another build, a damaged or a
/// truncated one.
struct SnapshotReader {
    private let data: Data
    private var offset = 0

    init(path: String) throws {
        data = try Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)
        guard data.count >= IndexSnapshot.magic.count + 16 else { throw IndexSnapshot.Unreadable(description: "too short") }
        let body = data.count - 8
        let stored = data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: body, as: UInt64.self) }
        let computed = data.withUnsafeBytes { buffer -> UInt64 in
            var crc = crc32(0, nil, 0)
            var position = 0
            let bytes = buffer.bindMemory(to: UInt8.self)
            while position < body {
                let step = min(body - position, Int(UInt32.max))
                crc = crc32(crc, bytes.baseAddress! + position, UInt32(step))
                position += step
            }
            return UInt64(crc)
        }
        guard stored == computed else { throw IndexSnapshot.Unreadable(description: "its checksum does not match") }
        guard try bytes() == IndexSnapshot.magic else { throw IndexSnapshot.Unreadable(description: "not an index snapshot") }
        let build = try string()
        guard build == IndexSnapshot.build else {
            throw IndexSnapshot.Unreadable(description: "written by another build (\(build))")
        }
    }

    private mutating func section() throws -> Range<Int> {
        let end = data.count - 8
        guard offset + 8 <= end else { throw IndexSnapshot.Unreadable(description: "ends early") }
        let count = data.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: offset, as: UInt64.self) }
        guard count <= UInt64(end - offset - 8) else { throw IndexSnapshot.Unreadable(description: "a section runs past the end") }
        let start = offset + 8
        let range = start..<(start + Int(count))
        offset = range.upperBound + (8 - Int(count) % 8) % 8
        return range
    }

    mutating func array<T: BitwiseCopyable>(of _: T.Type = T.self) throws -> [T] {
        let range = try section()
        return elements(in: range, count: try Self.count(of: T.self, in: range))
    }

    private static func count<T>(of _: T.Type, in range: Range<Int>) throws -> Int {
        guard range.count % MemoryLayout<T>.stride == 0 else {
            throw IndexSnapshot.Unreadable(description: "a section of \(T.self) has a partial element")
        }
        return range.count / MemoryLayout<T>.stride
    }

    /// `count` elements copied out of the file from the start of `range`.
    private func elements<T: BitwiseCopyable>(in range: Range<Int>, count: Int) -> [T] {
        data.withUnsafeBytes { buffer in
            [T](unsafeUninitializedCapacity: count) { elements, initialized in
                if count > 0 {
                    let bytes = range.lowerBound..<(range.lowerBound + count * MemoryLayout<T>.stride)
                    UnsafeMutableRawBufferPointer(elements).copyMemory(from: UnsafeRawBufferPointer(rebasing: buffer[bytes]))
                }
                initialized = count
            }
        }
    }

    mutating func bytes() throws -> [UInt8] { try array() }

    mutating func int() throws -> Int {
        let values: [Int64] = try array()
        guard values.count == 1 else { throw IndexSnapshot.Unreadable(description: "a number is missing") }
        return Int(values[0])
    }

    mutating func string() throws -> String { String(decoding: try bytes(), as: UTF8.self) }

    mutating func strings() throws -> [String] {
        let lengths: [UInt32] = try array()
        let bytes = try bytes()
        var strings: [String] = []
        strings.reserveCapacity(lengths.count)
        var position = 0
        for length in lengths {
            let end = position + Int(length)
            guard end <= bytes.count else { throw IndexSnapshot.Unreadable(description: "a string runs past its section") }
            strings.append(String(decoding: bytes[position..<end], as: UTF8.self))
            position = end
        }
        return strings
    }

    /// Lists copied one by one out of the file (an arena's chunks never sit in one
    /// array on the way).
    mutating func nested<T: BitwiseCopyable>(of _: T.Type = T.self) throws -> [[T]] {
        let counts: [UInt64] = try array()
        let range = try section()
        var left = try Self.count(of: T.self, in: range)
        var lists: [[T]] = []
        lists.reserveCapacity(counts.count)
        var start = range.lowerBound
        for count in counts {
            guard count <= UInt64(left) else { throw IndexSnapshot.Unreadable(description: "a list runs past its section") }
            lists.append(elements(in: start..<range.upperBound, count: Int(count)))
            start += Int(count) * MemoryLayout<T>.stride
            left -= Int(count)
        }
        return lists
    }
}
