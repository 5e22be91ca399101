import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Synchronization

/// The one HTTP client every push leaves through: one HTTP/2 connection per push
/// service origin (APNs' environments, each Web Push service), reused, as Apple asks,
/// written frame by frame (`HTTP2Origin`); a Web Push service that offers only
/// HTTP/1.1 (by ALPN) over keep-alive connections (`HTTP1Origin`). Only `https` URLs:
/// APNs and Web Push (RFC 8030) are HTTPS, and registration refuses other endpoints.
///
/// The event loops are made on the first push or by `makeLoops()`, and shut down by
/// `shutdown()`. They are the client's own (`push-http-…`), not NIO's shared ones: a
/// thread takes its creator's priority, and chat's push sender, which lowers its own
/// (`PushPriority.background`), has the service make them first, at normal priority.
public final class PushHTTP: Sendable {
    private let tlsConfiguration: TLSConfiguration
    /// The loops every push is carried on, made with the first; nil after `shutdown()`.
    private let loops = Mutex<(group: MultiThreadedEventLoopGroup?, shutDown: Bool)>((nil, false))
    /// The loops' threads by their kernel ids, once each has started (tests, diagnostics).
    private let loopThreads = Mutex<[Int32]>([])
    /// The origins by `host:port`, and the TLS contexts they share (made with the first):
    /// each origin's HTTP/2 connection, and its HTTP/1.1 ones once it refused HTTP/2.
    private let origins = Mutex(Origins())
    /// The base URLs `post(base:path:)` was given, parsed once: nil for one that is not
    /// `https` with a host and no query (its pushes' URLs are parsed whole, as `post` does).
    private let bases = Mutex<[String: BaseURL?]>([:])
    /// How long one push's request may take, connection included.
    let timeout: TimeAmount
    /// How long a connection (HTTP/2 or HTTP/1.1) stays open with no push on it.
    let idleTimeout: TimeAmount

    /// - Parameter caFile: a PEM file of certificates trusted besides the system's (a
    ///   test's stand-in, a proxy's own CA).
    public init(caFile: String? = nil, timeout: TimeAmount = .seconds(30), idleTimeout: TimeAmount = .minutes(5)) {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.additionalTrustRoots = [.file(caFile)] }
        tlsConfiguration = tls
        self.timeout = timeout
        self.idleTimeout = idleTimeout
    }

    /// Closes the connections, blocking until they are closed (not on an event loop, and
    /// with no task of Swift's pool to wait for); pushes after it fail.
    public func shutdown() {
        let (http2, http1) = origins.withLock { origins in
            defer { origins = Origins(shutDown: true) }
            return (Array(origins.http2.values), Array(origins.http1.values))
        }
        for origin in http2 { try? origin.close().wait() }
        for origin in http1 { try? origin.close().wait() }
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
    var originCount: Int { origins.withLock { $0.http2.count } }

    struct NotHTTPS: Error, CustomStringConvertible {
        var url: String
        var description: String { "\(url) is not an https URL with a host: pushes leave only over HTTPS" }
    }

    struct Answer {
        var status: Int
        var headers: HTTPHeaders
        var body: Data
    }

    /// A request ready to leave: its origin found (and with it the event loop it leaves on
    /// and its answer comes back on), its body in a buffer.
    struct PreparedRequest: Sendable {
        fileprivate let origin: HTTP2Origin
        fileprivate let path: String
        fileprivate let headers: [(String, String)]
        fileprivate let body: ByteBuffer

        var eventLoop: any EventLoop { origin.eventLoop }
    }

    /// POSTs `body`; fails only when no answer came (no connection, a time-out). On
    /// futures, not tasks: the completion runs on the connection's event loop, with no
    /// hop through Swift's task pool per push (at thousands of pushes a second, those
    /// hops' thread wake-ups cost more than the pushes).
    func post(_ url: String, headers: [(String, String)], body: Data) -> EventLoopFuture<Answer> {
        post(prepare(url, headers: headers, body: body))
    }

    /// POSTs `body` to `base` + `path`, as `post(_:headers:body:)` does.
    func post(base: String, path: String, headers: [(String, String)], body: Data) -> EventLoopFuture<Answer> {
        post(prepare(base: base, path: path, headers: headers, body: body))
    }

    /// The request to `url`, or why it cannot leave (a URL that is not `https`, the client shut down).
    func prepare(_ url: String, headers: [(String, String)], body: Data) -> Result<PreparedRequest, any Error> {
        prepare(url, headers: headers, body: body) { try self.origin(of: url) }
    }

    /// The request to `base` + `path`, with the base URL parsed the first time it is given,
    /// not for every push (APNs' URLs differ only in the device token after `/3/device/`).
    func prepare(base: String, path: String, headers: [(String, String)], body: Data) -> Result<PreparedRequest, any Error> {
        let url = base + path
        return prepare(url, headers: headers, body: body) {
            guard let parts = self.baseURL(base) else { return try self.origin(of: url) }
            return (try self.origin(host: parts.host, port: parts.port), parts.path + path)
        }
    }

    /// - Parameter locate: the origin and the request's path, nil for a URL that is not `https`.
    private func prepare(_ url: String, headers: [(String, String)], body: Data,
                         locate: () throws -> (HTTP2Origin, path: String)?) -> Result<PreparedRequest, any Error> {
        Result {
            guard let (origin, path) = try locate() else { throw NotHTTPS(url: url) }
            return PreparedRequest(origin: origin, path: path, headers: headers, body: ByteBuffer(bytes: body))
        }
    }

    /// A push that leaves as `request`, on the request's event loop: `outcome` turns its
    /// answer (or why it could not leave) into the push's outcome.
    func push(_ request: Result<PreparedRequest, any Error>,
              outcome: @escaping @Sendable (EventLoopFuture<Answer>) -> EventLoopFuture<PushOutcome>) -> PreparedPush {
        switch request {
        case .success(let ready):
            return PreparedPush(on: ready.eventLoop) { [self] in outcome(post(request)) }
        case .failure(let error):
            let loop = anyLoop
            return PreparedPush(on: loop) { outcome(loop.makeFailedFuture(error)) }
        }
    }

    /// Sends a prepared request. Called on the request's event loop, every callback on the
    /// way is added there directly; from another thread each costs a hand-over to it.
    ///
    /// Over the origin's HTTP/2 connection, unless the service said (by ALPN) that it
    /// speaks only HTTP/1.1: then, from that request on, over its HTTP/1.1 connections.
    func post(_ prepared: Result<PreparedRequest, any Error>) -> EventLoopFuture<Answer> {
        let request: PreparedRequest
        switch prepared {
        case .success(let ready): request = ready
        case .failure(let error): return anyLoop.makeFailedFuture(error)
        }
        let origin = request.origin, path = request.path, headers = request.headers, body = request.body
        guard origin.speaksHTTP2 else { return postHTTP1(to: origin, path, headers: headers, body: body) }
        return origin.post(path, headers: headers, body: body).flatMapError { error in
            guard let failure = error as? OriginFailure, failure.notHTTP2 else { return origin.eventLoop.makeFailedFuture(error) }
            return self.postHTTP1(to: origin, path, headers: headers, body: body)
        }
    }

    /// Over the HTTP/1.1 connections to the origin that refused HTTP/2.
    private func postHTTP1(to origin: HTTP2Origin, _ path: String, headers: [(String, String)], body: ByteBuffer) -> EventLoopFuture<Answer> {
        origin.markUsed()
        do {
            return try http1(origin).post(path, headers: headers, body: body)
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
    /// other URL.
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
            if let origin = origins.http2[authority] { return origin }
            guard !origins.shutDown else { throw OriginFailure.shutDown }
            let tls = try origins.http2TLS ?? context(offering: ["h2", "http/1.1"])
            let origin = HTTP2Origin(OriginEndpoint(host: host.trimmingCharacters(in: CharacterSet(charactersIn: "[]")), port: port,
                                                    tls: tls, timeout: timeout, idleTimeout: idleTimeout, eventLoop: anyLoop))
            origins.http2TLS = tls
            // A new origin is rare (a Web Push service not seen before): forget those with
            // no push for twice the idle time, whose connections have closed, so that
            // subscriptions at many hosts (HEREABOUTS_WEBPUSH_HOSTS=*) do not pile up.
            let stale = NIODeadline.now() - .nanoseconds(idleTimeout.nanoseconds * 2)
            origins.http2 = origins.http2.filter { !$0.value.unused(since: stale) }
            let kept = Set(origins.http2.values.map(ObjectIdentifier.init))
            origins.http1 = origins.http1.filter { kept.contains($0.key) }
            origins.http2[authority] = origin
            return origin
        }
    }

    /// The HTTP/1.1 connections to an origin that refused HTTP/2, made the first time they are asked for.
    private func http1(_ origin: HTTP2Origin) throws -> HTTP1Origin {
        return try origins.withLock { origins in
            if let known = origins.http1[ObjectIdentifier(origin)] { return known }
            guard !origins.shutDown else { throw OriginFailure.shutDown }
            let tls = try origins.http1TLS ?? context(offering: ["http/1.1"])
            origins.http1TLS = tls
            let made = HTTP1Origin(origin.endpoint.with(tls: tls))
            origins.http1[ObjectIdentifier(origin)] = made
            return made
        }
    }

    private func context(offering protocols: [String]) throws -> NIOSSLContext {
        var tls = tlsConfiguration
        tls.applicationProtocols = protocols
        return try NIOSSLContext(configuration: tls)
    }

    /// The origins met so far: by `host:port`, and the HTTP/1.1 ones by their HTTP/2 origin.
    struct Origins {
        var http2: [String: HTTP2Origin] = [:]
        var http1: [ObjectIdentifier: HTTP1Origin] = [:]
        var http2TLS: NIOSSLContext?
        var http1TLS: NIOSSLContext?
        var shutDown = false
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
