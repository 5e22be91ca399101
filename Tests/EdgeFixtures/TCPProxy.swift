import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A TCP proxy on a loopback port in front of another: what one process reaches
/// another by, so that a test can do to their traffic what a network would. Each
/// connection is carried by a thread each way, through hooks that may shorten what
/// goes by and cut the connection after it; `cut()` drops every connection and
/// refuses new ones until `mend()`.
public final class TCPProxy: @unchecked Sendable {
    /// What to write of a chunk that came, and whether to cut the connection after it.
    public typealias Hook = @Sendable (_ chunk: [UInt8]) -> (write: [UInt8], thenCut: Bool)

    public let port: Int
    private let upstream: Int
    private let listener: Int32
    /// Makes the hooks of a new connection: up (client to server) and down.
    private let hooks: @Sendable () -> (up: Hook, down: Hook)
    private let lock = NSLock()
    private var connections: [ObjectIdentifier: Connection] = [:]
    private var isCut = false
    private var isStopped = false

    public static let passing: @Sendable () -> (up: Hook, down: Hook) = { ({ ($0, false) }, { ($0, false) }) }

    public init(upstream: Int, hooks: @escaping @Sendable () -> (up: Hook, down: Hook) = TCPProxy.passing) throws {
        self.upstream = upstream
        self.hooks = hooks
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else {
            close(listener)
            throw POSIXError(.EADDRINUSE)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread.detachNewThread { [self] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                serve(client)
            }
        }
    }

    deinit { stop() }

    /// Drops every connection through it, and refuses new ones until `mend`.
    public func cut() {
        let open = lock.withLock { () -> [Connection] in
            isCut = true
            return Array(connections.values)
        }
        open.forEach { $0.shutDown() }
    }

    public func mend() {
        lock.withLock { isCut = false }
    }

    /// Stops taking connections (once: a second call would close a descriptor number
    /// the process may have given to something else meanwhile).
    public func stop() {
        let first = lock.withLock { () -> Bool in
            defer { isStopped = true }
            return !isStopped
        }
        guard first else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func serve(_ client: Int32) {
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: upstream)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        let connection = Connection(client, server)
        let admitted = lock.withLock { () -> Bool in
            guard !isCut, connected == 0 else { return false }
            connections[ObjectIdentifier(connection)] = connection
            return true
        }
        guard admitted else {
            connection.end()
            connection.end()
            return
        }
        let (up, down) = hooks()
        for (source, sink, hook) in [(client, server, up), (server, client, down)] {
            Thread.detachNewThread { [self] in
                Self.pump(from: source, to: sink, hook)
                if connection.end() { lock.withLock { _ = connections.removeValue(forKey: ObjectIdentifier(connection)) } }
            }
        }
    }

    /// Copies bytes from `source` to `sink` until either end closes, or the hook says
    /// to cut the connection after what it gives to write.
    private static func pump(from source: Int32, to sink: Int32, _ hook: Hook) {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            let (bytes, thenCut) = hook(Array(buffer[..<count]))
            guard writeAll(sink, bytes), !thenCut else { return }
        }
    }

    private static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
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

        func shutDown() {
            shutdown(sockets.0, Int32(SHUT_RDWR))
            shutdown(sockets.1, Int32(SHUT_RDWR))
        }

        /// One side is done; true for the second, which closes both.
        @discardableResult
        func end() -> Bool {
            shutDown()
            let last = lock.withLock { running -= 1; return running == 0 }
            if last {
                close(sockets.0)
                close(sockets.1)
            }
            return last
        }
    }
}
