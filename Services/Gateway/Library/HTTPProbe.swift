import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP GET over a plain TCP connection, for `here` to see whether the edge
/// answers (`here up`, `here status`) without an HTTP client library.
public enum HTTPProbe {
    /// The status code of `GET path` at `host:port`, or nil when nothing answered
    /// within `timeout` seconds.
    public static func status(of path: String, at address: String, timeout: TimeInterval = 1) -> Int? {
        response(of: path, at: address, timeout: timeout)?.status
    }

    /// The status code and body of `GET path`.
    public static func response(of path: String, at address: String, timeout: TimeInterval = 1) -> (status: Int, body: String)? {
        guard let colon = address.lastIndex(of: ":"), let port = UInt16(address[address.index(after: colon)...]) else { return nil }
        var host = String(address[..<colon])
        if host.isEmpty || host == "0.0.0.0" { host = "127.0.0.1" }
        var hints = addrinfo(ai_flags: 0, ai_family: AF_UNSPEC, ai_socktype: Int32(SOCK_STREAM.rawValue), ai_protocol: 0,
                             ai_addrlen: 0, ai_addr: nil, ai_canonname: nil, ai_next: nil)
        var info: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), "\(port)", &hints, &info) == 0, let first = info else {
            return nil
        }
        defer { freeaddrinfo(info) }
        let fd = socket(first.pointee.ai_family, first.pointee.ai_socktype, first.pointee.ai_protocol)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var limit = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - timeout.rounded(.down)) * 1_000_000))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
        guard connect(fd, first.pointee.ai_addr, first.pointee.ai_addrlen) == 0 else { return nil }
        let request = "GET \(path) HTTP/1.1\r\nHost: \(host)\r\nConnection: close\r\n\r\n"
        guard request.withCString({ send(fd, $0, strlen($0), 0) }) > 0 else { return nil }
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
        }
        let text = String(decoding: received, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        guard let statusLine = parts.first?.split(separator: "\r\n").first?.split(separator: " "), statusLine.count >= 2,
              let status = Int(statusLine[1]) else { return nil }
        return (status, parts.dropFirst().joined(separator: "\r\n\r\n"))
    }
}

/// Where the edge listens, as `here` finds it.
public enum EdgeAddress {
    public static let defaultListen = "127.0.0.1:8080"

    /// `given`, else `HEREABOUTS_EDGE_LISTEN`, else 127.0.0.1:8080.
    public static func listen(_ given: String?, environment: [String: String]) -> String {
        given ?? environment["HEREABOUTS_EDGE_LISTEN"].flatMap { $0.isEmpty ? nil : $0 } ?? defaultListen
    }
}
