import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Synchronization
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

    /// A version 4 UUID in lower case, unique within the process and, by its random
    /// part, across processes. Foundation's `UUID()` opens /dev/urandom for each one;
    /// two draws of the system's random source per id were two system calls a
    /// request. So 122 random bits are drawn once a millisecond, and the ids made in
    /// the same millisecond count up from them (as `Identifier.sortable` does): an id
    /// only has to tell requests apart, and says nothing a client could use.
    static func newRequestID() -> String {
        let (high, low) = requestIDBits.withLock { bits -> (UInt64, UInt64) in
            let now = DispatchTime.now().uptimeNanoseconds / 1_000_000
            if now != bits.millisecond {
                var generator = SystemRandomNumberGenerator()
                bits = (now, generator.next(), generator.next())
            } else {
                bits.low &+= 1
            }
            return (bits.high, bits.low)
        }
        return String(unsafeUninitializedCapacity: 36) { text in
            let hex: StaticString = "0123456789abcdef"
            var at = 0
            for index in 0..<16 {
                var byte = UInt8(truncatingIfNeeded: (index < 8 ? high : low) >> (8 * (7 - index % 8)))
                if index == 6 { byte = byte & 0x0F | 0x40 }  // version 4
                if index == 8 { byte = byte & 0x3F | 0x80 }  // RFC 9562's variant
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[at] = UInt8(ascii: "-")
                    at += 1
                }
                text[at] = hex.utf8Start[Int(byte >> 4)]
                text[at + 1] = hex.utf8Start[Int(byte & 0x0F)]
                at += 2
            }
            return at
        }
    }

    /// The millisecond of the last request id, and its 128 bits.
    private static let requestIDBits = Mutex<(millisecond: UInt64, high: UInt64, low: UInt64)>((0, 0, 0))

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
