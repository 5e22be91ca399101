import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A TCP relay on a loopback port to another: what one process reaches another by,
/// so that a test can cut the link between them (`cut`), as a network would, and
/// mend it (`mend`), while each process runs on.
final class TCPRelay: @unchecked Sendable {
    let port: Int
    private let target: Int
    private let listener: Int32
    private let open = Mutex<Set<Int32>>([])
    private let isCut = Atomic<Bool>(false)

    init(to target: Int) throws {
        self.target = target
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(listener, 64) == 0 else { throw CocoaError(.fileWriteUnknown) }
        var local = sockaddr_in(), length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &local) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
        self.listener = listener
        port = Int(UInt16(bigEndian: local.sin_port))
        Thread.detachNewThread { [self] in accepting() }
    }

    deinit {
        cut()
        close(listener)
    }

    /// Drops every connection through it and refuses new ones until `mend`.
    func cut() {
        isCut.store(true, ordering: .sequentiallyConsistent)
        open.withLock { sockets in
            for fd in sockets { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    func mend() {
        isCut.store(false, ordering: .sequentiallyConsistent)
    }

    private func accepting() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            guard !isCut.load(ordering: .sequentiallyConsistent) else {
                close(client)
                continue
            }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(port: target)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else {
                close(client)
                close(server)
                continue
            }
            open.withLock { $0.formUnion([client, server]) }
            Thread.detachNewThread { [self] in pump(from: client, to: server) }
            Thread.detachNewThread { [self] in pump(from: server, to: client) }
        }
    }

    private func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(source, &buffer, buffer.count, 0)
            guard count > 0, !isCut.load(ordering: .sequentiallyConsistent),
                  send(destination, buffer, count, Int32(MSG_NOSIGNAL)) == count else { break }
        }
        shutdown(source, Int32(SHUT_RDWR))
        shutdown(destination, Int32(SHUT_RDWR))
        open.withLock { sockets in
            if sockets.remove(source) != nil { close(source) }
        }
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        return address
    }
}
