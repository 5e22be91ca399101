import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP1
import NIOHTTP2
import NIOSSL
import NIOTLS
import Synchronization

/// POSTs to one HTTPS origin over one HTTP/2 connection, written frame by frame: each
/// request is a HEADERS and a DATA frame on a stream of the connection, with no channel,
/// state machine or future chain of its own, and the requests handed over between two
/// turns of the connection's event loop leave in one flush (one TLS record, one `write`).
/// At thousands of pushes a second that is what APNs asks of a provider: one connection,
/// many streams; AsyncHTTPClient's layers per request cost chat more than the push itself.
///
/// The connection is made on the first request and made again on the first request after
/// it closed or the server said it is going away (GOAWAY). A request fails (and the push
/// is tried again later) when its connection closes before its answer, the server resets
/// its stream, or no answer comes within `timeout`. A connection idle for `idleTimeout`
/// closes (APNs asks providers to keep theirs open across pushes, so the default is long).

final class HTTP2Origin: Sendable {
    typealias Request = OriginRequest

    let endpoint: OriginEndpoint
    var eventLoop: any EventLoop { endpoint.eventLoop }
    private var authority: String { endpoint.authority }
    /// Requests handed over from any thread, and whether a turn of the loop is already due to write them.
    private let handedOver = Mutex<(requests: [Request], scheduled: Bool)>(([], false))
    /// The connection in use, on the event loop only.
    private let current: NIOLoopBoundBox<Connection?>
    private let closed = Mutex(false)
    private let alpn: ALPNVerdict
    /// When the last push was handed over.
    private let lastUsed = Mutex(NIODeadline.now())

    /// Whether the server speaks HTTP/2, as far as is known (yes, until a handshake says otherwise).
    var speaksHTTP2: Bool { !alpn.refusedHTTP2.withLock { $0 } }

    /// - Parameter endpoint: with TLS that offers `h2` (and `http/1.1`, so that a server that
    ///   speaks only that says so by ALPN).
    init(_ endpoint: OriginEndpoint) {
        self.endpoint = endpoint
        self.alpn = ALPNVerdict()
        self.current = .makeEmptyBox(valueType: Connection.self, eventLoop: endpoint.eventLoop)
    }

    /// POSTs `body` to `path`; the future completes on this origin's event loop.
    func post(_ path: String, headers: [(String, String)], body: ByteBuffer) -> EventLoopFuture<PushHTTP.Answer> {
        let promise = eventLoop.makePromise(of: PushHTTP.Answer.self)
        let now = NIODeadline.now()
        lastUsed.withLock { $0 = now }
        let request = Request(path: path, headers: headers, body: body, promise: promise, deadline: now + endpoint.timeout)
        let schedule = handedOver.withLock { state -> Bool in
            state.requests.append(request)
            defer { state.scheduled = true }
            return !state.scheduled
        }
        if schedule { eventLoop.execute { self.writeHandedOver() } }
        return promise.futureResult
    }

    /// Counts as a push handed over (one that left over the origin's HTTP/1.1 connections
    /// instead), so that the origin is not forgotten as unused.
    func markUsed() {
        lastUsed.withLock { $0 = .now() }
    }

    /// Whether no push was handed over since `instant`.
    func unused(since instant: NIODeadline) -> Bool {
        lastUsed.withLock { $0 } < instant
    }

    /// Closes the connection; requests after it fail.
    func close() -> EventLoopFuture<Void> {
        closed.withLock { $0 = true }
        return eventLoop.submit {
            self.current.value?.close(.shutDown)
            self.current.value = nil
            self.writeHandedOver()
        }
    }

    /// On the loop: everything handed over goes out on the connection (made when there is
    /// none usable), with one flush.
    private func writeHandedOver() {
        let requests = handedOver.withLock { state -> [Request] in
            defer { state = ([], false) }
            return state.requests
        }
        guard !requests.isEmpty else { return }
        if closed.withLock({ $0 }) {
            for request in requests { request.promise.fail(OriginFailure.shutDown) }
            return
        }
        let connection: Connection
        if let usable = current.value, usable.isUsable {
            connection = usable
        } else if !speaksHTTP2 {
            // Handed over before a handshake said the server refuses HTTP/2: they go over HTTP/1.1
            // (`PushHTTP`) without another TLS handshake to hear it again.
            let refused = OriginFailure(description: "\(authority) does not speak HTTP/2", notHTTP2: true)
            for request in requests { request.promise.fail(refused) }
            return
        } else {
            connection = Connection(authority: authority, alpn: alpn, idleTimeout: endpoint.idleTimeout)
            current.value = connection
            connect(connection)
        }
        connection.start(requests)
    }

    private func connect(_ connection: Connection) {
        let bound = NIOLoopBound(connection, eventLoop: eventLoop)
        endpoint.connect { [authority] pipeline in
            try pipeline.addHandlers([
                NIOHTTP2Handler(mode: .client, connectionConfiguration: Streams.connectionConfiguration,
                                streamConfiguration: Streams.streamConfiguration),
                Streams(connection: bound.value, authority: authority),
            ])
        }
            .assumeIsolated()
            .whenFailure { [authority] error in
                connection.close(because: "cannot connect to \(authority): \(error)")
            }
    }
}

extension HTTP2Origin {
    /// One TCP + TLS + HTTP/2 connection and the requests waiting for it or on it. On the loop only.
    final class Connection {
        private let authority: String
        let alpn: ALPNVerdict
        private var waiting: [Request] = []
        private var streams: Streams?
        private var channel: (any Channel)?
        private(set) var isUsable = true
        private var sweep: Scheduled<Void>?
        private let idleTimeout: TimeAmount
        /// When a sweep last found a stream open.
        private var lastBusy = NIODeadline.now()

        init(authority: String, alpn: ALPNVerdict, idleTimeout: TimeAmount) {
            self.authority = authority
            self.alpn = alpn
            self.idleTimeout = idleTimeout
        }

        func start(_ requests: [Request]) {
            if let streams, let channel {
                streams.start(requests, on: channel)
            } else {
                waiting += requests
            }
        }

        func connected(_ channel: any Channel, streams: Streams) {
            guard isUsable else {
                channel.close(promise: nil)
                return
            }
            self.channel = channel
            self.streams = streams
            channel.closeFuture.assumeIsolated().whenComplete { _ in
                self.close(because: "the connection to \(self.authority) closed")
            }
            scheduleSweep()
            let requests = waiting
            waiting = []
            streams.start(requests, on: channel)
        }

        /// Answers overdue, and the connection's idleness, are looked at once a second, not
        /// with a timer per request.
        private func scheduleSweep() {
            guard let channel, let streams, isUsable || streams.hasInFlight else { return }
            sweep = channel.eventLoop.assumeIsolated().scheduleTask(in: .seconds(1)) {
                let now = NIODeadline.now()
                streams.failOverdue(now: now, on: channel)
                if streams.hasInFlight {
                    self.lastBusy = now
                } else if now - self.lastBusy >= self.idleTimeout {
                    self.retire()
                    return
                }
                self.scheduleSweep()
            }
        }

        /// No new requests from now on (the server is going away, or the stream ids ran
        /// out); the connection closes once those on it have finished.
        func retire() {
            isUsable = false
            closeIfDone()
        }

        func closeIfDone() {
            if !isUsable, let streams, !streams.hasInFlight {
                close(because: "the connection to \(authority) was retired")
            }
        }

        func close(because reason: String) {
            close(OriginFailure(description: reason))
        }

        func close(_ failure: OriginFailure) {
            isUsable = false
            sweep?.cancel()
            sweep = nil
            for request in waiting { request.promise.fail(failure) }
            waiting = []
            // The connection and its streams handler hold each other until here.
            streams?.failAll(failure)
            streams = nil
            channel?.close(promise: nil)
        }
    }

    /// The last handler of the connection's pipeline: writes each request's frames and
    /// matches the frames coming back to the requests, by stream.
    final class Streams: ChannelInboundHandler {
        typealias InboundIn = HTTP2Frame
        typealias OutboundOut = HTTP2Frame

        /// Ours to the server: a large window per stream (its answers are small; no
        /// stream-level WINDOW_UPDATE is ever needed), no pushes from the server.
        static let settings: HTTP2Settings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: 100),
            HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
            HTTP2Setting(parameter: .maxHeaderListSize, value: 16_384),
            HTTP2Setting(parameter: .enablePush, value: 0),
        ]
        /// The connection's settings (`settings`), without NIO's checks of header blocks.
        static var connectionConfiguration: NIOHTTP2Handler.ConnectionConfiguration {
            var configuration = NIOHTTP2Handler.ConnectionConfiguration()
            configuration.initialSettings = settings
            // NIO's checks of each header block sent and read cost a fifth of the connection's
            // CPU a push (BENCHMARKS.md, Pushes). What is sent is built here from checked values
            // (a hex token, a bundle id of [A-Za-z0-9._-], a percent-encoded URL path, base64url
            // tokens, numbers); of an answer only `:status` and a few fields are read, and one
            // without a `:status` fails its push, which is tried again.
            configuration.headerBlockValidation = .disabled
            configuration.contentLengthValidation = .disabled
            return configuration
        }
        /// A server may follow each answer with RST_STREAM (NO_ERROR) when it answered before
        /// reading the whole request (RFC 9113 8.1; nginx does whenever the body has not all
        /// come), so a push client may see a reset for many of its pushes. NIO's default (200
        /// resets in 30 s, made against clients that open and reset streams) would end the
        /// connection every 200 such resets and send the pushes in flight again. A server can
        /// reset only the streams this client opened, so here the bound is above the rate
        /// pushes leave: 50,000 a second, counted over 100 ms (NIO keeps a time for each reset
        /// in the window).
        static var streamConfiguration: NIOHTTP2Handler.StreamConfiguration {
            var configuration = NIOHTTP2Handler.StreamConfiguration()
            configuration.streamResetFrameRateLimit.maximumCount = 5_000
            configuration.streamResetFrameRateLimit.windowLength = .milliseconds(100)
            return configuration
        }
        /// Header fields whose values differ from one push to the next.
        static let differEachTime: Set<String> = ["apns-expiration", "apns-collapse-id", "ttl", "topic"]
        /// The connection's inbound window (HTTP/2's initial 65,535) is topped up once half of it is used.
        static let connectionWindow = 65_535

        private struct InFlight {
            var request: Request
            var status: Int?
            var headers = HTTPHeaders()
            var body = Data()
        }

        private let connection: Connection
        private let authority: String
        private var inFlight: [Int32: InFlight] = [:]
        private var nextStream: Int32 = 1
        private var unacknowledgedBytes = 0

        init(connection: Connection, authority: String) {
            self.connection = connection
            self.authority = authority
        }

        func start(_ requests: [Request], on channel: any Channel) {
            for request in requests {
                // Stream ids are odd and only grow; near the end of them the next request opens a new connection.
                guard nextStream < Int32.max - 2 else {
                    request.promise.fail(OriginFailure(description: "the connection used up its stream ids"))
                    connection.retire()
                    continue
                }
                let id = nextStream
                nextStream += 2
                inFlight[id] = InFlight(request: request)
                // A value that differs from push to push is sent as a literal, kept out of HPACK's table:
                // indexed, it would push out the ones that repeat (the provider token, the topic) and
                // lengthen each look-up in the table for nothing.
                var headers = HPACKHeaders()
                headers.add(name: ":method", value: "POST")
                headers.add(name: ":scheme", value: "https")
                headers.add(name: ":path", value: request.path, indexing: .nonIndexable)
                headers.add(name: ":authority", value: authority)
                for (name, value) in request.headers {
                    headers.add(name: name, value: value, indexing: Self.differEachTime.contains(name) ? .nonIndexable : .indexable)
                }
                headers.add(name: "content-length", value: String(request.body.readableBytes), indexing: .nonIndexable)
                let stream = HTTP2StreamID(id)
                channel.write(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: headers))), promise: nil)
                let written = channel.eventLoop.makePromise(of: Void.self)
                written.futureResult.assumeIsolated().whenFailure { error in self.finish(id, failure: "the request could not be written: \(error)") }
                channel.write(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(request.body), endStream: true))),
                              promise: written)
            }
            channel.flush()
        }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let frame = unwrapInboundIn(data)
            let id = Int32(frame.streamID)
            switch frame.payload {
            case .headers(let headers):
                guard var stream = inFlight[id] else { return }
                for (name, value, _) in headers.headers {
                    if name == ":status" {
                        stream.status = Int(value)
                    } else if !name.hasPrefix(":") {
                        stream.headers.add(name: name, value: value)
                    }
                }
                inFlight[id] = stream
                if headers.endStream { finish(id) }
            case .data(let data):
                giveBack(data.data.readableBytes + (data.paddingBytes ?? 0), context: context)
                if case .byteBuffer(let bytes) = data.data, var stream = inFlight[id] {
                    stream.body.append(contentsOf: bytes.readableBytesView.prefix(OriginRequest.answerBodyLimit - stream.body.count))
                    inFlight[id] = stream
                }
                if data.endStream { finish(id) }
            case .goAway(let last, _, _):
                // Streams after `last` were not taken: they fail (and are tried again); no new ones here.
                connection.retire()
                for stream in inFlight.keys where stream > Int32(last) {
                    finish(stream, failure: "the server went away before taking the request")
                }
            default:
                break
            }
        }

        func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
            if case .handshakeCompleted(let negotiated) = event as? TLSUserEvent, negotiated != "h2" {
                connection.alpn.refusedHTTP2.withLock { $0 = true }
                connection.close(OriginFailure(description: "\(authority) does not speak HTTP/2 (ALPN: \(negotiated ?? "none"))", notHTTP2: true))
                return
            }
            if let closed = event as? StreamClosedEvent {
                // Normally the answer's last frame finished the stream already.
                let id = Int32(closed.streamID)
                finish(id, failure: closed.reason.map { "the server reset the stream (\($0))" })
            }
            context.fireUserInboundEventTriggered(event)
        }

        func errorCaught(context: ChannelHandlerContext, error: any Error) {
            if let streamError = error as? NIOHTTP2Errors.StreamError {
                finish(Int32(streamError.streamID), failure: "\(streamError.baseError)")
                return
            }
            connection.close(because: "the connection to \(authority) failed: \(error)")
        }

        /// The connection's first requests leave once the handler before this one sent the
        /// HTTP/2 preface, which it does on channelActive (after the connect's own promise).
        func channelActive(context: ChannelHandlerContext) {
            connection.connected(context.channel, streams: self)
            context.fireChannelActive()
        }

        func channelInactive(context: ChannelHandlerContext) {
            connection.close(because: "the connection to \(authority) closed")
            context.fireChannelInactive()
        }

        /// Flow control: the server may send as much again as was read.
        private func giveBack(_ bytes: Int, context: ChannelHandlerContext) {
            unacknowledgedBytes += bytes
            guard unacknowledgedBytes >= Self.connectionWindow / 2 else { return }
            context.writeAndFlush(wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: unacknowledgedBytes))),
                                  promise: nil)
            unacknowledgedBytes = 0
        }

        /// The stream's answer as it stands, or `failure`; a stream already finished is left alone.
        private func finish(_ id: Int32, failure: String? = nil) {
            guard let stream = inFlight.removeValue(forKey: id) else { return }
            if failure == nil, let status = stream.status {
                stream.request.promise.succeed(PushHTTP.Answer(status: status, headers: stream.headers, body: stream.body))
            } else {
                stream.request.promise.fail(OriginFailure(description: failure ?? "the stream ended without an answer"))
            }
            if inFlight.isEmpty { connection.closeIfDone() }
        }

        func failOverdue(now: NIODeadline, on channel: any Channel) {
            for (id, stream) in inFlight where stream.request.deadline < now {
                finish(id, failure: "no answer within the time allowed")
                channel.write(HTTP2Frame(streamID: HTTP2StreamID(id), payload: .rstStream(.cancel)), promise: nil)
            }
            channel.flush()
        }

        var hasInFlight: Bool { !inFlight.isEmpty }

        func failAll(_ failure: OriginFailure) {
            let all = inFlight
            inFlight = [:]
            for stream in all.values { stream.request.promise.fail(failure) }
        }
    }
}

/// What the server of an origin answered by ALPN, shared by its connections.
final class ALPNVerdict: Sendable {
    let refusedHTTP2 = Mutex(false)
}

