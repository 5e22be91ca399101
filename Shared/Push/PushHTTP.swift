import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization

/// The one HTTP client every push leaves through. AsyncHTTPClient negotiates HTTP/2 by
/// ALPN and keeps one connection per host, multiplexing the pushes to it: APNs gets one
/// connection per environment, reused, as Apple asks; each Web Push service one more.
///
/// The client is made on the first push and shut down by `shutdown()`: a service that
/// never pushes (a test's, the fuzzer's) holds none, since AsyncHTTPClient traps in
/// debug builds on a client dropped without a shutdown.
public final class PushHTTP: Sendable {
    private enum State {
        case idle
        case running(HTTPClient)
        case shutDown
    }

    private let configuration: HTTPClient.Configuration
    private let state = Mutex(State.idle)
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
        self.configuration = configuration
        self.timeout = timeout
    }

    /// Closes the connections, blocking until they are closed (not on an event loop, and
    /// with no task of Swift's pool to wait for); pushes after it fail.
    public func shutdown() {
        let client = state.withLock { state -> HTTPClient? in
            defer { state = .shutDown }
            if case .running(let client) = state { return client }
            return nil
        }
        try? client?.syncShutdown()
    }

    struct ShutDown: Error, CustomStringConvertible {
        var description: String { "the push client is shut down" }
    }

    private func client() throws -> HTTPClient {
        try state.withLock { state in
            switch state {
            case .running(let client): return client
            case .shutDown: throw ShutDown()
            case .idle:
                let client = HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
                state = .running(client)
                return client
            }
        }
    }

    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    /// POSTs `body`; fails only when no answer came (no connection, a time-out). On
    /// futures, not tasks: the completion runs on the connection's event loop, with no
    /// hop through Swift's task pool per push (at thousands of pushes a second, those
    /// hops' thread wake-ups cost more than the pushes).
    func post(_ url: String, headers: [(String, String)], body: Data) -> EventLoopFuture<Answer> {
        do {
            let request = try HTTPClient.Request(url: url, method: .POST, headers: HTTPHeaders(headers),
                                                 body: .byteBuffer(ByteBuffer(bytes: body)))
            return try client().execute(request: request, deadline: .now() + timeout).map { response in
                Answer(status: Int(response.status.code), headers: response.headers,
                       body: response.body.map { Data($0.readableBytesView) } ?? Data())
            }
        } catch {
            return HTTPClient.defaultEventLoopGroup.next().makeFailedFuture(error)
        }
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
