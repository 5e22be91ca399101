import Foundation

/// A ZeroMQ REQ socket's side of ZMTP 3.1 (the NULL mechanism), spoken over one
/// blocking TCP connection: the same kind of client the bench gives Redis and
/// PostgreSQL (`TCPConnection`), so that a service and a peer are compared by what
/// they do, not by their clients. libzmq's own client adds an I/O thread and two
/// thread wake-ups a request on the same cores (`LoadGenerator`).
final class ZMTPRequestConnection {
    private let connection: TCPConnection

    private static let more: UInt8 = 0x01, long: UInt8 = 0x02, command: UInt8 = 0x04

    /// Connects to `endpoint` (`tcp://host:port`) and completes the handshake.
    init(endpoint: String) throws {
        guard endpoint.hasPrefix("tcp://"), let colon = endpoint.lastIndex(of: ":"),
              let port = UInt16(endpoint[endpoint.index(after: colon)...]) else {
            throw PeerError("\(endpoint) is not a tcp://host:port endpoint")
        }
        let host = String(endpoint[endpoint.index(endpoint.startIndex, offsetBy: 6)..<colon])
        connection = try TCPConnection(host: host == "localhost" ? "127.0.0.1" : host, port: port)
        // The greeting: signature, version 3.1, mechanism NULL, as-server 0, filler.
        var greeting = [UInt8](repeating: 0, count: 64)
        greeting[0] = 0xFF
        greeting[9] = 0x7F
        greeting[10] = 3
        greeting[11] = 1
        for (index, byte) in "NULL".utf8.enumerated() { greeting[12 + index] = byte }
        let ready = Self.commandBody("READY", properties: [("Socket-Type", "REQ")])
        try connection.write(greeting + Self.frame(ready, flags: Self.command))
        let theirs = try connection.read(count: 64)
        guard theirs[0] == 0xFF, theirs[9] == 0x7F, theirs[10] >= 3 else { throw PeerError("\(endpoint) does not speak ZMTP 3") }
        // Their READY (NULL has nothing else before it).
        let (flags, body) = try readFrame()
        guard flags & Self.command != 0, body.starts(with: [5] + Array("READY".utf8)) else {
            throw PeerError("\(endpoint) did not send READY")
        }
    }

    /// Sends one request (its frames, after REQ's empty delimiter) and returns the
    /// reply's frames, the delimiter taken off. Answers the peer's heartbeats meanwhile.
    func request(_ frames: [Data]) throws -> [[UInt8]] {
        var bytes = Self.frame([], flags: Self.more)
        for (index, frame) in frames.enumerated() {
            bytes += Self.frame(Array(frame), flags: index < frames.count - 1 ? Self.more : 0)
        }
        try connection.write(bytes)
        var reply: [[UInt8]] = []
        while true {
            let (flags, body) = try readFrame()
            if flags & Self.command != 0 {
                // PING: name, TTL (2 bytes), context; PONG sends the context back.
                if body.starts(with: [4] + Array("PING".utf8)) {
                    try connection.write(Self.frame([4] + Array("PONG".utf8) + body.dropFirst(7), flags: Self.command))
                }
                continue
            }
            reply.append(body)
            if flags & Self.more == 0 { break }
        }
        if reply.first?.isEmpty == true { reply.removeFirst() }
        return reply
    }

    private func readFrame() throws -> (flags: UInt8, body: [UInt8]) {
        let flags = try connection.readByte()
        var size = 0
        if flags & Self.long != 0 {
            for byte in try connection.read(count: 8) { size = size << 8 | Int(byte) }
        } else {
            size = Int(try connection.readByte())
        }
        guard size <= 64 << 20 else { throw PeerError("a frame of \(size) bytes") }
        return (flags, try connection.read(count: size))
    }

    private static func frame(_ body: [UInt8], flags: UInt8) -> [UInt8] {
        if body.count < 256 { return [flags, UInt8(body.count)] + body }
        let size = UInt64(body.count)
        return [flags | long] + (0..<8).map { UInt8(truncatingIfNeeded: size >> (56 - 8 * $0)) } + body
    }

    private static func commandBody(_ name: String, properties: [(String, String)]) -> [UInt8] {
        var body = [UInt8(name.utf8.count)] + Array(name.utf8)
        for (key, value) in properties {
            let count = UInt32(value.utf8.count)
            body += [UInt8(key.utf8.count)] + Array(key.utf8)
            body += [UInt8(count >> 24), UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count)]
            body += Array(value.utf8)
        }
        return body
    }
}

extension LoadGenerator {
    /// As `run(endpoint:…)`, each client a blocking ZMTP connection (`ZMTPRequestConnection`)
    /// instead of a libzmq REQ socket.
    static func runBlocking(endpoint: String, clients: Int, seconds: Double, warmup: Double = 1,
                            request: @escaping @Sendable (Int, Int) -> [Data], check: @escaping @Sendable ([UInt8]) -> Bool) -> LoadResult {
        ClosedLoop.run(clients: clients, seconds: seconds, warmup: warmup) { index in
            guard let connection = try? ZMTPRequestConnection(endpoint: endpoint) else { return nil }
            return ClosedLoop.Client { sequence in
                guard let first = try connection.request(request(index, sequence)).first else { throw PeerError("an empty reply") }
                return check(first)
            }
        }
    }
}
