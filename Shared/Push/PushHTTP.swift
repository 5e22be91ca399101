import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// The one HTTP client every push leaves through: one HTTP/2 connection per push
/// service origin (APNs' environments, each Web Push service), reused, as Apple asks,
/// written frame by frame (`HTTP2Origin`); a Web Push service that offers only
/// HTTP/1.1 (by ALPN) through AsyncHTTPClient.
///
/// The AsyncHTTPClient is made on the first push that needs it, the event loops on the
/// first push or by `makeLoops()`, and both are shut down by `shutdown()`: a service that
/// never pushes (a test's, the fuzzer's) holds no client, since AsyncHTTPClient traps in
/// debug builds on a client dropped without a shutdown. The loops are the client's own
/// (`push-http-…`), not NIO's shared ones: a thread takes its creator's priority, and
/// chat's push sender, which lowers its own (`PushPriority.background`), has the service
/// make them first, at normal priority.
public final class PushHTTP: Sendable {
    private enum State {
        case idle
        case running(HTTPClient)
        case shutDown
    }

    private let configuration: HTTPClient.Configuration
    private let state = Mutex(State.idle)
    /// The loops every push is carried on, made with the first; nil after `shutdown()`.
    private let loops = Mutex<(group: MultiThreadedEventLoopGroup?, shutDown: Bool)>((nil, false))
    /// The loops' threads by their kernel ids, once each has started (tests, diagnostics).
    private let loopThreads = Mutex<[Int32]>([])
    /// HTTP/2 origins by `host:port`, and the TLS context they share (made with the first).
    private let origins = Mutex<(tls: NIOSSLContext?, byAuthority: [String: HTTP2Origin])>((nil, [:]))
    /// The base URLs `post(base:path:)` was given, parsed once: nil for one that is not
    /// `https` with a host and no query (its pushes' URLs are parsed whole, as `post` does).
    private let bases = Mutex<[String: BaseURL?]>([:])
    /// How long one push's request may take, connection included.
    let timeout: TimeAmount
    /// How long an HTTP/2 connection stays open with no push on it.
    let idleTimeout: TimeAmount

    /// - Parameter caFile: a PEM file of certificates trusted besides the system's (a
    ///   test's stand-in, a proxy's own CA).
    public init(caFile: String? = nil, timeout: TimeAmount = .seconds(30), idleTimeout: TimeAmount = .minutes(5)) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.httpVersion = .automatic
        configuration.timeout = .init(connect: .seconds(10), read: timeout)
        configuration.redirectConfiguration = .disallow
        self.configuration = configuration
        self.timeout = timeout
        self.idleTimeout = idleTimeout
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
        let origins = origins.withLock { origins in
            defer { origins.byAuthority = [:] }
            return Array(origins.byAuthority.values)
        }
        for origin in origins { try? origin.close().wait() }
        let group = loops.withLock { loops in
            defer { loops = (nil, true) }
            return loops.group
        }
        try? group?.syncShutdownGracefully()
    }

    /// The kernel ids of the event loops' threads that have started.
    public var threadIDs: [Int32] { loopThreads.withLock { $0 } }

    /// One of the client's event loops (for a future that needs one).
    public var anyLoop: any EventLoop { group.next() }

    /// Makes the event loops now, if they are not yet made: their threads take the calling
    /// thread's priority.
    public func makeLoops() {
        _ = group
    }

    /// The client's loops: one per core, made on first use. After `shutdown()`, a loop
    /// of NIO's shared group, so that what is asked fails on it rather than trapping.
    private var group: any EventLoopGroup {
        let (group, made) = loops.withLock { loops -> (MultiThreadedEventLoopGroup?, Bool) in
            if let group = loops.group { return (group, false) }
            if loops.shutDown { return (nil, false) }
            let group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
            loops.group = group
            return (group, true)
        }
        guard let group else { return MultiThreadedEventLoopGroup.singleton }
        if made {
            for (number, loop) in group.makeIterator().enumerated() {
                loop.execute { [self] in
                    Thread.current.name = "push-http-\(number)"
                    if let id = ThreadScheduling.currentThreadID() { loopThreads.withLock { $0.append(id) } }
                }
            }
        }
        return group
    }

    /// How many origins are known (tests).
    var originCount: Int { origins.withLock { $0.byAuthority.count } }

    struct ShutDown: Error, CustomStringConvertible {
        var description: String { "the push client is shut down" }
    }

    private func client() throws -> HTTPClient {
        try state.withLock { state in
            switch state {
            case .running(let client): return client
            case .shutDown: throw ShutDown()
            case .idle:
                let client = HTTPClient(eventLoopGroup: group, configuration: configuration)
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
    ///
    /// Over the origin's HTTP/2 connection, unless the service said (by ALPN) that it
    /// speaks only HTTP/1.1: then, from that request on, through AsyncHTTPClient.
    func post(_ url: String, headers: [(String, String)], body: Data) -> EventLoopFuture<Answer> {
        post(url, headers: headers, body: body) { try self.origin(of: url) }
    }

    /// POSTs `body` to `base` + `path`, as `post(_:headers:body:)` does, with the base
    /// URL parsed the first time it is given, not for every push (APNs' URLs differ only
    /// in the device token after `/3/device/`).
    func post(base: String, path: String, headers: [(String, String)], body: Data) -> EventLoopFuture<Answer> {
        let url = base + path
        return post(url, headers: headers, body: body) {
            guard let parts = self.baseURL(base) else { return try self.origin(of: url) }
            return (try self.origin(host: parts.host, port: parts.port), parts.path + path)
        }
    }

    /// - Parameter locate: the origin and the request's path, nil for a URL that is not `https`.
    private func post(_ url: String, headers: [(String, String)], body: Data,
                      locate: () throws -> (HTTP2Origin, path: String)?) -> EventLoopFuture<Answer> {
        let origin: HTTP2Origin, path: String
        do {
            guard let https = try locate() else { return postHTTP1(url, headers: headers, body: body) }
            (origin, path) = https
        } catch {
            return anyLoop.makeFailedFuture(error)
        }
        guard origin.speaksHTTP2 else { return postHTTP1(url, headers: headers, body: body) }
        return origin.post(path, headers: headers, body: ByteBuffer(bytes: body)).flatMapError { error in
            guard let failure = error as? HTTP2Origin.Failure, failure.notHTTP2 else { return origin.eventLoop.makeFailedFuture(error) }
            return self.postHTTP1(url, headers: headers, body: body)
        }
    }

    private func postHTTP1(_ url: String, headers: [(String, String)], body: Data) -> EventLoopFuture<Answer> {
        do {
            let request = try HTTPClient.Request(url: url, method: .POST, headers: HTTPHeaders(headers),
                                                 body: .byteBuffer(ByteBuffer(bytes: body)))
            return try client().execute(request: request, deadline: .now() + timeout).map { response in
                Answer(status: Int(response.status.code), headers: response.headers,
                       body: response.body.map { Data($0.readableBytesView) } ?? Data())
            }
        } catch {
            return anyLoop.makeFailedFuture(error)
        }
    }
}

extension PushHTTP {
    /// A base URL's host, port and path (percent-encoded, perhaps empty).
    struct BaseURL: Sendable {
        var host: String
        var port: Int
        var path: String
    }

    /// `base` parsed (once): nil unless it is `https` with a host and no query or fragment,
    /// so that its path followed by a push's is the path of the whole URL.
    private func baseURL(_ base: String) -> BaseURL? {
        if let known = bases.withLock({ $0[base] }) { return known }
        let parsed = URLComponents(string: base).flatMap { parts -> BaseURL? in
            guard parts.scheme == "https", let host = parts.host, !host.isEmpty, parts.percentEncodedQuery == nil,
                  parts.percentEncodedFragment == nil else { return nil }
            return BaseURL(host: host, port: parts.port ?? 443, path: parts.percentEncodedPath)
        }
        // A handful of bases (APNs' two hosts, or the one configured): kept for good.
        bases.withLock { $0[base] = parsed }
        return parsed
    }

    /// The origin of an `https` URL and the request's path (with its query), nil for any
    /// other URL (AsyncHTTPClient says what is wrong with it).
    private func origin(of url: String) throws -> (HTTP2Origin, path: String)? {
        guard let parts = URLComponents(string: url), parts.scheme == "https", let host = parts.host, !host.isEmpty else {
            return nil
        }
        let path = (parts.percentEncodedPath.isEmpty ? "/" : parts.percentEncodedPath)
            + (parts.percentEncodedQuery.map { "?" + $0 } ?? "")
        return (try origin(host: host, port: parts.port ?? 443), path)
    }

    /// The HTTP/2 origin for `host:port`, made the first time it is asked for.
    private func origin(host: String, port: Int) throws -> HTTP2Origin {
        let authority = "\(host):\(port)"
        return try origins.withLock { origins in
            if let origin = origins.byAuthority[authority] { return origin }
            if case .shutDown = state.withLock({ $0 }) { throw ShutDown() }
            let tls = try origins.tls ?? {
                var tls = configuration.tlsConfiguration ?? .makeClientConfiguration()
                tls.applicationProtocols = ["h2", "http/1.1"]
                return try NIOSSLContext(configuration: tls)
            }()
            let origin = HTTP2Origin(host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port, tls: tls,
                                     timeout: timeout, idleTimeout: idleTimeout, eventLoop: anyLoop)
            origins.tls = tls
            // A new origin is rare (a Web Push service not seen before): forget those with
            // no push for twice the idle time, whose connections have closed, so that
            // subscriptions at many hosts (HEREABOUTS_WEBPUSH_HOSTS=*) do not pile up.
            let stale = NIODeadline.now() - .nanoseconds(idleTimeout.nanoseconds * 2)
            origins.byAuthority = origins.byAuthority.filter { !$0.value.unused(since: stale) }
            origins.byAuthority[authority] = origin
            return origin
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
