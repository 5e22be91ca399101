import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection to the edge, driven byte by byte: tests send exactly the
/// bytes a client would (well-formed or not, all at once or slowly) and read what
/// comes back. Blocking, with a receive timeout.
///
/// One thread may send (a slow sender's bytes) while another reads; reading is one
/// thread's at a time.
public final class RawConnection: @unchecked Sendable {
    private let fd: Int32
    private var buffered = Data()

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    /// - Parameter source: the local address to send from (`127.0.0.2`: every
    ///   127.x address is this machine's, so tests can be several clients).
    /// - Parameter receiveBuffer: the kernel's receive buffer for it, in bytes (a small
    ///   one makes a client that does not read push back on the server at once).
    public init(port: Int, host: String = "127.0.0.1", source: String? = nil, timeout: TimeInterval = 30,
                receiveBuffer: Int? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket: \(errno)") }
        if var bytes = receiveBuffer.map(Int32.init) {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size))
        }
        if let source {
            guard Self.with(source, port: 0, { bind(fd, $0, $1) }) == 0 else {
                close(fd)
                throw Failure(description: "bind to \(source): errno \(errno)")
            }
        }
        guard Self.with(host, port: port, { connect(fd, $0, $1) }) == 0 else {
            close(fd)
            throw Failure(description: "connect to \(host):\(port): errno \(errno)")
        }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        setTimeout(timeout)
    }

    deinit { close(fd) }

    /// Calls `body` with the IPv4 socket address of `host` and `port`, and its size.
    private static func with(_ host: String, port: Int, _ body: (UnsafePointer<sockaddr>, socklen_t) -> Int32) -> Int32 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, host, &address.sin_addr)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
    }

    /// Ends the connection both ways (a reader blocked on it returns).
    public func shutdown() {
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
    }

    public func setTimeout(_ seconds: TimeInterval) {
        var limit = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends all of `bytes`; false when the peer has closed (or reset) the connection.
    @discardableResult
    public func send(_ bytes: Data) -> Bool {
        bytes.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let sent = Glibc.send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                if sent <= 0 { return false }
                offset += sent
            }
            return true
        }
    }

    @discardableResult
    public func send(_ text: String) -> Bool { send(Data(text.utf8)) }

    /// Reads whatever arrives next: nil when the peer closed the connection or the
    /// timeout passed with nothing.
    public func receiveSome() -> Data? {
        if !buffered.isEmpty {
            defer { buffered = Data() }
            return buffered
        }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = recv(fd, &buffer, buffer.count, 0)
        return count > 0 ? Data(buffer[0..<count]) : nil
    }

    /// True when the peer closes the connection within `seconds` (whatever it sent first is read and dropped).
    public func closesWithin(_ seconds: TimeInterval) -> Bool {
        setTimeout(seconds)
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let count = recv(fd, &buffer, buffer.count, 0)
            if count == 0 { return true }
            if count < 0 { return errno == ECONNRESET }
        }
        return false
    }

    /// Reads one HTTP/1.1 response: its head, and a body by `Content-Length` or chunks
    /// (none for 1xx, 204, 304 and answers to HEAD).
    public func receiveResponse(to method: String = "GET") throws -> HTTPReply {
        var data = Data()
        let separator = Data("\r\n\r\n".utf8)
        while data.range(of: separator) == nil {
            guard let more = receiveSome() else {
                throw Failure(description: "the connection ended before a response head (\(data.count) bytes: \(String(decoding: data, as: UTF8.self)))")
            }
            data.append(more)
        }
        let end = data.range(of: separator)!
        let head = String(decoding: data[data.startIndex..<end.lowerBound], as: UTF8.self)
        var rest = Data(data[end.upperBound...])
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { throw Failure(description: "bad status line in \(head)") }
        let headers = lines.compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var reply = HTTPReply(status: status, headers: headers, body: Data())
        if method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) {
            buffered = rest
            return reply
        }
        func fill(to count: Int) throws {
            while rest.count < count {
                guard let more = receiveSome() else { throw Failure(description: "the connection ended inside a body") }
                rest.append(more)
            }
        }
        if let length = reply.header("Content-Length").flatMap(Int.init) {
            try fill(to: length)
            reply.body = Data(rest.prefix(length))
            buffered = Data(rest.dropFirst(length))
        } else if reply.header("Transfer-Encoding")?.lowercased() == "chunked" {
            let crlf = Data("\r\n".utf8)
            while true {
                while rest.range(of: crlf) == nil {
                    guard let more = receiveSome() else { throw Failure(description: "the connection ended inside a chunk") }
                    rest.append(more)
                }
                let line = rest.range(of: crlf)!
                let sizeText = String(decoding: rest[rest.startIndex..<line.lowerBound], as: UTF8.self)
                guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else {
                    throw Failure(description: "bad chunk size \(sizeText)")
                }
                rest = Data(rest[line.upperBound...])
                try fill(to: size + 2)
                reply.body.append(rest.prefix(size))
                rest = Data(rest.dropFirst(size + 2))
                if size == 0 { break }
            }
            buffered = rest
        } else {
            // Until the connection closes.
            while let more = receiveSome() { rest.append(more) }
            reply.body = rest
        }
        return reply
    }
}

/// An HTTP response as a test reads it.
public struct HTTPReply: Sendable, CustomStringConvertible {
    public var status: Int
    public var headers: [(String, String)]
    public var body: Data

    public init(status: Int, headers: [(String, String)], body: Data) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first header of that name (any case).
    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    public var description: String {
        "\(status) \(headers.map { "\($0.0): \($0.1)" }.joined(separator: "; ")) \(text.prefix(600))"
    }
}
