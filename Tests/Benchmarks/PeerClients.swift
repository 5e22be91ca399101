import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A blocking TCP connection to a peer on loopback (Redis, PostgreSQL), with a read
/// buffer: the peers' own wire protocols, spoken directly, so their clients cost
/// about what a ZeroMQ request does.
final class TCPConnection {
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var position = 0
    private let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 16)

    init(host: String = "127.0.0.1", port: UInt16) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw PeerError("socket() failed") }
        var noDelay: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        // On a throw, deinit closes the descriptor (every property is set by then).
        guard connected == 0 else { throw PeerError("cannot connect to \(host):\(port)") }
    }

    deinit {
        close(descriptor)
        scratch.deallocate()
    }

    func write(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(descriptor, $0.baseAddress! + sent, bytes.count - sent, 0) }
            guard n > 0 else { throw PeerError("send failed") }
            sent += n
        }
    }

    /// Reads what has arrived (up to 64 KiB) into `scratch`, kept for the connection's
    /// life: a fresh 64 KiB chunk a read, zeroed and freed, cost every peer's client a
    /// few microseconds a request.
    private func fill() throws {
        if position > 0 && position == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            position = 0
        }
        let n = recv(descriptor, scratch.baseAddress!, scratch.count, 0)
        guard n > 0 else { throw PeerError("connection closed") }
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[0..<n]))
    }

    func readByte() throws -> UInt8 {
        while position >= buffer.count { try fill() }
        defer { position += 1 }
        return buffer[position]
    }

    func read(count: Int) throws -> [UInt8] {
        while buffer.count - position < count { try fill() }
        defer { position += count }
        return Array(buffer[position..<position + count])
    }

    /// A line ending in CRLF, without it.
    func readLine() throws -> [UInt8] {
        var line: [UInt8] = []
        while true {
            let byte = try readByte()
            if byte == 0x0D {
                _ = try readByte()
                return line
            }
            line.append(byte)
        }
    }
}

struct PeerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Redis's RESP: commands as arrays of bulk strings; replies read whole.
final class RedisConnection {
    enum Reply {
        case simple(String)
        case error(String)
        case integer(Int)
        case bulk([UInt8]?)
        case array([Reply])
    }

    private let connection: TCPConnection

    init(port: UInt16) throws {
        connection = try TCPConnection(port: port)
    }

    static func encode(_ arguments: [String]) -> [UInt8] {
        var bytes = Array("*\(arguments.count)\r\n".utf8)
        for argument in arguments {
            bytes += Array("$\(argument.utf8.count)\r\n".utf8) + Array(argument.utf8) + [0x0D, 0x0A]
        }
        return bytes
    }

    func send(_ arguments: [String]) throws -> Reply {
        try connection.write(Self.encode(arguments))
        return try readReply()
    }

    /// Sends many commands at once and reads their replies (loading data).
    func pipeline(_ commands: [[String]]) throws -> [Reply] {
        try connection.write(commands.flatMap(Self.encode))
        return try commands.map { _ in try readReply() }
    }

    private func readReply() throws -> Reply {
        let line = try connection.readLine()
        let rest = String(decoding: line.dropFirst(), as: UTF8.self)
        switch line.first {
        case UInt8(ascii: "+"): return .simple(rest)
        case UInt8(ascii: "-"): return .error(rest)
        case UInt8(ascii: ":"): return .integer(Int(rest) ?? 0)
        case UInt8(ascii: "$"):
            let length = Int(rest) ?? -1
            if length < 0 { return .bulk(nil) }
            let bytes = try connection.read(count: length)
            _ = try connection.read(count: 2)
            return .bulk(bytes)
        case UInt8(ascii: "*"):
            let count = Int(rest) ?? -1
            if count < 0 { return .array([]) }
            return .array(try (0..<count).map { _ in try readReply() })
        default:
            throw PeerError("unreadable Redis reply")
        }
    }
}

/// PostgreSQL's frontend/backend protocol v3, simple queries only, trust auth: what
/// a benchmark client needs and no more.
final class PostgresConnection {
    private let connection: TCPConnection

    init(port: UInt16, user: String, database: String) throws {
        connection = try TCPConnection(port: port)
        var body: [UInt8] = []
        body += Self.int32(196_608)  // protocol 3.0
        for (key, value) in [("user", user), ("database", database)] {
            body += Array(key.utf8) + [0] + Array(value.utf8) + [0]
        }
        body += [0]
        try connection.write(Self.int32(Int32(body.count + 4)) + body)
        _ = try readUntilReady()
    }

    /// Runs one statement; returns the rows' text fields.
    func query(_ sql: String) throws -> [[String?]] {
        let body = Array(sql.utf8) + [0]
        try connection.write([UInt8(ascii: "Q")] + Self.int32(Int32(body.count + 4)) + body)
        return try readUntilReady()
    }

    private func readUntilReady() throws -> [[String?]] {
        var rows: [[String?]] = []
        var failure: String?
        while true {
            let type = try connection.readByte()
            let lengthBytes = try connection.read(count: 4)
            let length = Int(lengthBytes.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).bigEndian }) - 4
            let body = try connection.read(count: length)
            switch type {
            case UInt8(ascii: "D"):
                var offset = 2
                let columns = Int(UInt16(body[0]) << 8 | UInt16(body[1]))
                var row: [String?] = []
                for _ in 0..<columns {
                    let size = Int(Int32(bitPattern: UInt32(body[offset]) << 24 | UInt32(body[offset + 1]) << 16
                                         | UInt32(body[offset + 2]) << 8 | UInt32(body[offset + 3])))
                    offset += 4
                    if size < 0 {
                        row.append(nil)
                    } else {
                        row.append(String(decoding: body[offset..<offset + size], as: UTF8.self))
                        offset += size
                    }
                }
                rows.append(row)
            case UInt8(ascii: "E"):
                failure = String(decoding: body.map { $0 == 0 ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
            case UInt8(ascii: "R"):
                let code = body.withUnsafeBytes { $0.loadUnaligned(as: UInt32.self).bigEndian }
                if code != 0 { throw PeerError("PostgreSQL asks for a password (code \(code)); the bench cluster uses trust") }
            case UInt8(ascii: "Z"):
                if let failure { throw PeerError("PostgreSQL: \(failure)") }
                return rows
            default:
                continue
            }
        }
    }

    private static func int32(_ value: Int32) -> [UInt8] {
        withUnsafeBytes(of: value.bigEndian) { Array($0) }
    }
}
