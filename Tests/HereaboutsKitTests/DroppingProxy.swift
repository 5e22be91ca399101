import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy in front of the edge that loses answers the way a phone on a train
/// does: the first `times` requests whose first line starts with `prefix` reach the
/// server and are applied, and the connection is cut one byte into the answer's
/// body, so the client never learns what happened.
///
/// Where the cut falls matters. An HTTP client may resend a request by itself on a
/// reused connection that closed before any byte of an answer (libcurl does), and
/// the retry under test would then be the library's, not the kit's. And a cut inside
/// the answer's head crashes FoundationNetworking on Linux ("Transfer completed, but
/// there's no response", swift-corelibs-foundation #5285) before the kit can see it.
final class DroppingProxy: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let prefix: [UInt8]
    private let lock = NSLock()
    private var dropsLeft: Int
    private var droppedCount = 0

    /// How many answers were cut off so far.
    var dropped: Int { lock.withLock { droppedCount } }

    init(upstream: Int, dropping prefix: String, times: Int) throws {
        self.prefix = Array(prefix.utf8)
        dropsLeft = times
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.listener = listener
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 16) == 0 else { throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                serve(client, upstream: upstream)
            }
        }
    }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func serve(_ client: Int32, upstream port: Int) {
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(client)
            close(server)
            return
        }
        // Requests on one connection go one at a time, so a request seen going up
        // owns the next answer coming down.
        let cutNextAnswer = Flag()
        let connection = Connection(client, server)
        Thread.detachNewThread { [self] in
            Self.pump(from: client, to: server, connection) { chunk in
                if chunk.starts(with: prefix), takeDrop() { cutNextAnswer.set() }
                return (chunk, false)
            }
        }
        Thread.detachNewThread {
            var headersSent = false
            Self.pump(from: server, to: client, connection) { chunk in
                guard cutNextAnswer.isSet else { return (chunk, false) }
                if headersSent { return (Array(chunk.prefix(1)), true) }
                guard let end = chunk.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound else { return (chunk, false) }
                headersSent = true
                // The answer's head and one byte of its body: the client knows the
                // status, and that the answer broke off.
                let cut = min(chunk.count, end + 1)
                return (Array(chunk[..<cut]), cut > end)
            }
        }
    }

    private func takeDrop() -> Bool {
        lock.withLock {
            guard dropsLeft > 0 else { return false }
            dropsLeft -= 1
            droppedCount += 1
            return true
        }
    }

    /// Copies bytes from `source` to `sink` until either end closes, or `pass` says
    /// to cut the connection after what it gives to write.
    private static func pump(from source: Int32, to sink: Int32, _ connection: Connection,
                             _ pass: ([UInt8]) -> (write: [UInt8], thenCut: Bool)) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        defer { connection.end() }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            let (bytes, thenCut) = pass(Array(buffer[..<count]))
            guard writeAll(sink, bytes), !thenCut else { return }
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written > 0 else { return false }
            offset += written
        }
        return true
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// Both sockets of one proxied connection: the first pump to end shuts both
    /// down, which ends the other; the second closes them.
    private final class Connection: @unchecked Sendable {
        private let lock = NSLock()
        private let sockets: (Int32, Int32)
        private var running = 2

        init(_ client: Int32, _ server: Int32) { sockets = (client, server) }

        func end() {
            shutdown(sockets.0, Int32(SHUT_RDWR))
            shutdown(sockets.1, Int32(SHUT_RDWR))
            let last = lock.withLock { running -= 1; return running == 0 }
            if last {
                close(sockets.0)
                close(sockets.1)
            }
        }
    }

    /// A flag one thread sets and another reads.
    private final class Flag: @unchecked Sendable {
        private let lock = NSLock()
        private var value = false
        var isSet: Bool { lock.withLock { value } }
        func set() { lock.withLock { value = true } }
    }
}
