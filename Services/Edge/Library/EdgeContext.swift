import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Wire

/// What the edge knows about a request besides the request itself.
struct EdgeContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// The address the connection comes from: the client, or a proxy in front of it.
    let peerAddress: String
    /// The client's address as the edge believes it: `X-Forwarded-For` when the peer
    /// is a trusted proxy, else the peer's address (set by `ClientMiddleware`).
    var clientAddress: String
    /// Whom per-address budgets count the client as: `clientAddress`, an IPv6 one by
    /// its /64 (`ClientAddress.budgetKey`; set by `ClientMiddleware`).
    var clientKey: String
    /// `X-Request-Id`, as sent or made (set by `ClientMiddleware`).
    var requestID = ""

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
        clientAddress = peerAddress
        clientKey = ClientAddress.budgetKey(peerAddress)
    }

    /// Bodies are read by the routes themselves, each with its own limit.
    var maxUploadSize: Int { EdgeSettings.jsonBodyBytes }
}

/// Every request: its id (`X-Request-Id`, echoed or made, and logged), and whom it
/// comes from (`X-Forwarded-For`, believed from trusted proxies only).
struct ClientMiddleware: RouterMiddleware {
    typealias Context = EdgeContext
    let trustedProxies: Set<String>

    func handle(_ request: Request, context: EdgeContext, next: (Request, EdgeContext) async throws -> Response) async throws -> Response {
        var context = context
        context.requestID = Self.requestID(of: request.headers)
        context.logger[metadataKey: "request"] = "\(context.requestID)"
        context.clientAddress = Self.client(of: request.headers, peer: context.peerAddress, trusting: trustedProxies)
        context.clientKey = ClientAddress.budgetKey(context.clientAddress)
        var response = try await next(request, context)
        response.headers[.xRequestID] = context.requestID
        return response
    }

    /// The request's id: its `X-Request-Id` when that is 1–128 visible ASCII
    /// characters, else a new one.
    static func requestID(of headers: HTTPFields) -> String {
        let sent = headers[.xRequestID].flatMap { id in
            (1...128).contains(id.utf8.count) && id.utf8.allSatisfy { (0x21...0x7E).contains($0) } ? id : nil
        }
        return sent ?? newRequestID()
    }

    /// A random (version 4) UUID in lower case. Foundation's `UUID()` opens
    /// /dev/urandom for each one: a file opened and closed per request.
    static func newRequestID() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<2).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64, Array.init) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = Array("0123456789abcdef".utf8)
        var text = [UInt8]()
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Walks `X-Forwarded-For` from the nearest hop back while the hops are trusted;
    /// the first untrusted one is the client.
    static func client(of headers: HTTPFields, peer: String, trusting proxies: Set<String>) -> String {
        guard proxies.contains(peer) else { return peer }
        let hops = headers[values: .xForwardedFor].flatMap { $0.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for hop in hops.reversed() where !proxies.contains(hop) {
            return hop
        }
        return hops.first ?? peer
    }
}

extension HTTPField.Name {
    static let xRequestID = Self("X-Request-Id")!
    static let xForwardedFor = Self("X-Forwarded-For")!
    static let idempotencyKey = Self("Idempotency-Key")!
    static let link = Self("Link")!
}
