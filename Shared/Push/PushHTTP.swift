import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL

/// The one HTTP client every push leaves through. AsyncHTTPClient negotiates HTTP/2 by
/// ALPN and keeps one connection per host, multiplexing the pushes to it: APNs gets one
/// connection per environment, reused, as Apple asks; each Web Push service one more.
public final class PushHTTP: Sendable {
    let client: HTTPClient
    /// How long one push's request may take, connection included.
    let timeout: TimeAmount

    /// - Parameter caFile: a PEM file of certificates trusted besides the system's (a
    ///   test's stand-in, a proxy's own CA).
    public init(caFile: String? = nil, timeout: TimeAmount = .seconds(30)) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: .seconds(10), read: timeout)
        configuration.redirectConfiguration = .disallow
        client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
        self.timeout = timeout
    }

    public func shutdown() async {
        try? await client.shutdown()
    }

    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    /// POSTs `body`; throws only when no answer came (no connection, a time-out).
    func post(_ url: String, headers: [(String, String)], body: Data) async throws -> Answer {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: timeout)
        let bytes = try await response.body.collect(upTo: 64 * 1024)
        return Answer(status: Int(response.status.code), headers: response.headers, body: Data(bytes.readableBytesView))
    }
}

extension PushHTTP.Answer {
    /// The wait a 429 or 503 asked for (`Retry-After` in seconds), when it did.
    var retryAfter: TimeInterval? {
        headers.first(name: "retry-after").flatMap { TimeInterval($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The outcome of a status every push service uses alike: 429 and 5xx retry.
    var transientFailure: PushOutcome? {
        guard status == 429 || (500...599).contains(status) else { return nil }
        return .retry("HTTP \(status)\(reasonSuffix)", after: retryAfter)
    }

    var reasonSuffix: String {
        let text = String(decoding: body.prefix(200), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "" : ": \(text)"
    }
}
