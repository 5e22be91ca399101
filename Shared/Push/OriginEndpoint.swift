import NIOCore
import NIOPosix
import NIOSSL

/// A POST handed to an origin (`HTTP2Origin`, `HTTP1Origin`), and where its answer goes.
struct OriginRequest {
    var path: String
    var headers: [(String, String)]
    var body: ByteBuffer
    var promise: EventLoopPromise<PushHTTP.Answer>
    /// When it fails if it has no answer.
    var deadline: NIODeadline

    /// The most of an answer's body kept (APNs' and Web Push's reasons are a few dozen bytes).
    static let answerBodyLimit = 4_096
}

/// Why a request to an origin got no answer (its push is tried again later).
struct OriginFailure: Error, CustomStringConvertible {
    var description: String
    /// The server chose HTTP/1.1 (or nothing) by ALPN: the request was not sent.
    var notHTTP2 = false

    static let shutDown = OriginFailure(description: "the push client is shut down")
}

/// One HTTPS origin a push client posts to, and how its connections are made: what
/// `HTTP2Origin` and `HTTP1Origin` share. Every connection of an origin lives on its one
/// event loop.
struct OriginEndpoint: Sendable {
    /// The host as connected to (an IPv6 literal without its brackets).
    let host: String
    let port: Int
    /// `host`, or `host:port` when the port is not 443: the requests' `:authority` or `Host`.
    let authority: String
    /// TLS for the origin's connections, with the protocols it offers by ALPN.
    let tls: NIOSSLContext
    /// How long a request may wait for its answer, connection included.
    let timeout: TimeAmount
    /// How long a connection stays open with no request on it.
    let idleTimeout: TimeAmount
    let eventLoop: any EventLoop

    init(host: String, port: Int, tls: NIOSSLContext, timeout: TimeAmount, idleTimeout: TimeAmount, eventLoop: any EventLoop) {
        self.host = host
        self.port = port
        self.authority = port == 443 ? host : "\(host):\(port)"
        self.tls = tls
        self.timeout = timeout
        self.idleTimeout = idleTimeout
        self.eventLoop = eventLoop
    }

    /// The same origin over connections that offer other protocols by ALPN.
    func with(tls: NIOSSLContext) -> OriginEndpoint {
        OriginEndpoint(host: host, port: port, tls: tls, timeout: timeout, idleTimeout: idleTimeout, eventLoop: eventLoop)
    }

    /// A TLS connection to the origin (Nagle off), `handlers` added after TLS.
    func connect(adding handlers: @escaping @Sendable (ChannelPipeline.SynchronousOperations) throws -> Void) -> EventLoopFuture<any Channel> {
        let serverName = host.isIPAddress ? nil : host
        return ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(10))
            .channelOption(.socketOption(.tcp_nodelay), value: 1)
            .channelInitializer { [tls] channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(NIOSSLClientHandler(context: tls, serverHostname: serverName))
                    try handlers(pipeline)
                }
            }
            .connect(host: host, port: port)
    }
}

extension String {
    /// An IPv4 or IPv6 literal (which TLS's server name indication cannot carry).
    var isIPAddress: Bool {
        (try? SocketAddress(ipAddress: self, port: 0)) != nil
    }
}
