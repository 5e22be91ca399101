import Foundation
import Synchronization
import Wire

/// Thousands of `/v1/events` WebSockets from one process: each signed in with its
/// own user's token, all read by one thread polling their descriptors, pings
/// answered. The edge under test holds them; this only has to keep up.
final class SocketSwarm: @unchecked Sendable {
    private struct Connection {
        var fd: Int32
        var buffer: [UInt8] = []
        var ready = false
        var closed = false
    }

    // Touched by the reading thread only, once `read` has started.
    private var connections: [Connection] = []
    private let running = Atomic<Bool>(false)
    private let readyCount = Atomic<Int>(0)
    private let closedCount = Atomic<Int>(0)
    private var reader: Thread?
    /// Each text message after `ready`, with the index of the socket it came on.
    private let onMessage: @Sendable (Int, Substring) -> Void

    struct Failure: Error, CustomStringConvertible { let description: String }

    /// Opens a socket per token (the upgrade and the auth message), `batch` at a time.
    init(port: Int, tokens: [String], batch: Int = 200, onMessage: @escaping @Sendable (Int, Substring) -> Void) throws {
        self.onMessage = onMessage
        connections.reserveCapacity(tokens.count)
        var start = 0
        while start < tokens.count {
            let slice = tokens[start..<min(tokens.count, start + batch)]
            var opened: [Int32] = []
            for _ in slice {
                let fd = try Self.connect(port)
                let head = "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                try Self.write(fd, Array(head.utf8))
                opened.append(fd)
            }
            for (fd, token) in zip(opened, slice) {
                let response = try Self.readHead(fd)
                guard response.hasPrefix("HTTP/1.1 101") else {
                    throw Failure(description: "socket \(connections.count): \(response.prefix(200))")
                }
                let auth = JSONWriter.data(.object(["type": .string("auth"), "token": .string(token)]))
                try Self.write(fd, Self.frame(opcode: 1, payload: Array(auth)))
                _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
                connections.append(Connection(fd: fd))
            }
            start += batch
        }
    }

    deinit { stop() }

    var count: Int { connections.count }
    var ready: Int { readyCount.load(ordering: .relaxed) }
    var closed: Int { closedCount.load(ordering: .relaxed) }

    /// Starts reading every socket on a thread of its own.
    func start() {
        running.store(true, ordering: .relaxed)
        let thread = Thread { [self] in read() }
        thread.stackSize = 8 << 20
        reader = thread
        thread.start()
    }

    /// Waits until every socket is signed in (or `timeout` passes); how many are.
    func waitReady(timeout: TimeInterval) -> Int {
        let deadline = Date().addingTimeInterval(timeout)
        while ready + closed < count, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        return ready
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        while reader != nil, !(reader?.isFinished ?? true) { Thread.sleep(forTimeInterval: 0.01) }
        reader = nil
        for connection in connections { close(connection.fd) }
        connections.removeAll()
    }

    private func read() {
        var fds = connections.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while running.load(ordering: .relaxed) {
            let ready = poll(&fds, nfds_t(fds.count), 100)
            guard ready > 0 else { continue }
            for index in fds.indices where fds[index].revents != 0 {
                fds[index].revents = 0
                guard !connections[index].closed else { continue }
                while true {
                    let count = recv(fds[index].fd, &chunk, chunk.count, 0)
                    if count > 0 {
                        connections[index].buffer.append(contentsOf: chunk[0..<count])
                        continue
                    }
                    if count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { markClosed(index) }
                    break
                }
                parse(index)
            }
        }
    }

    private func markClosed(_ index: Int) {
        guard !connections[index].closed else { return }
        connections[index].closed = true
        closedCount.add(1, ordering: .relaxed)
    }

    /// Takes whole frames off a socket's buffer: text to `onMessage`, pings answered, a close noted.
    private func parse(_ index: Int) {
        let buffer = connections[index].buffer
        var offset = 0
        while buffer.count - offset >= 2 {
            let opcode = buffer[offset] & 0x0F
            var length = Int(buffer[offset + 1] & 0x7F)
            var header = 2
            if length == 126 {
                guard buffer.count - offset >= 4 else { break }
                length = Int(buffer[offset + 2]) << 8 | Int(buffer[offset + 3])
                header = 4
            } else if length == 127 {
                guard buffer.count - offset >= 10 else { break }
                length = (2..<10).reduce(0) { $0 << 8 | Int(buffer[offset + $1]) }
                header = 10
            }
            guard buffer.count - offset >= header + length else { break }
            let payload = Array(buffer[(offset + header)..<(offset + header + length)])
            offset += header + length
            switch opcode {
            case 1:
                let text = String(decoding: payload, as: UTF8.self)
                if !connections[index].ready, text.hasPrefix(#"{"type":"ready""#) {
                    connections[index].ready = true
                    readyCount.add(1, ordering: .relaxed)
                } else {
                    onMessage(index, text[...])
                }
            case 8:
                markClosed(index)
            case 9:
                try? Self.write(connections[index].fd, Self.frame(opcode: 10, payload: payload))
            default:
                break
            }
        }
        connections[index].buffer = offset == 0 ? buffer : Array(buffer[offset...])
    }

    // MARK: Sockets

    private static func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: errno \(errno) (raise the file limit)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            close(fd)
            throw Failure(description: "connect: errno \(errno)")
        }
        var limit = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    private static func write(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0, errno == EAGAIN || errno == EINTR { usleep(100); continue }
            guard sent > 0 else { throw Failure(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    /// Reads up to the end of the response head, byte by byte (nothing after it is sent before our auth).
    private static func readHead(_ fd: Int32) throws -> String {
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !(head.count >= 4 && head.suffix(4) == [13, 10, 13, 10]) {
            guard recv(fd, &byte, 1, 0) == 1 else { throw Failure(description: "no upgrade answer: errno \(errno)") }
            head.append(byte)
        }
        return String(decoding: head, as: UTF8.self)
    }

    /// A masked client frame.
    static func frame(opcode: UInt8, payload: [UInt8]) -> [UInt8] {
        var frame: [UInt8] = [0x80 | opcode]
        if payload.count < 126 {
            frame.append(0x80 | UInt8(payload.count))
        } else {
            frame += [0x80 | 126, UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        }
        let mask: [UInt8] = [0x12, 0x34, 0x56, 0x78]
        frame += mask
        frame += payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
        return frame
    }

    /// Raises this process's open-file limit to its hard limit (children inherit it); the new soft limit.
    static func raiseFileLimit() -> Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur)
    }
}
