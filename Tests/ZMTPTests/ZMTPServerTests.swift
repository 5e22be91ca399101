import Contracts
import Foundation
import Logging
import NIOCore
import NIOPosix
import ServiceClient
import Synchronization
import TestThreads
import Testing
import Wire
@testable import ZMTP
import ZeroMQ

/// The services' ROUTER written by NIO, against libzmq's own REQ and DEALER and the
/// edge's link: each must find it indistinguishable from a libzmq ROUTER.
@Suite("ZMTP's server (a service's ROUTER)", .ownThread)
struct ZMTPServerTests {
    private static let logger = Logger(label: "zmtp-server-test")

    private static func server(curve: (secretKey: String, allowedKeys: [String])? = nil, threads: Int = 2,
                               configure: (inout ZMTPServer.Configuration) -> Void = { _ in },
                               handler: @escaping ZMTPServer.Handler) throws -> ZMTPServer {
        var configuration = ZMTPServer.Configuration(endpoint: "tcp://127.0.0.1:*", threads: threads, curve: curve,
                                                     maxFrames: 4, maxBytes: 200_000, maxFrameBytes: 150_000)
        configure(&configuration)
        let server = try ZMTPServer(configuration: configuration, logger: logger, handler: handler)
        try server.start()
        return server
    }

    private static func client(_ type: SocketType, to endpoint: String, curve: CurveRole? = nil) throws -> Socket {
        let socket = try Context.shared.makeSocket(type)
        try socket.set(.linger(milliseconds: 0))
        try socket.set(.receiveTimeout(milliseconds: 2_000))
        try socket.secure(curve)
        try socket.connect(endpoint)
        return socket
    }

    @Test("libzmq's REQ and DEALER are answered under CURVE, at once or later from another thread, each on its own connection; a key not allowed gets nothing")
    func curveClients() throws {
        let serverKeys = try CurveKeyPair.generate(), clientKeys = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let later = Mutex<ZMTPServer?>(nil)
        // Echoes every frame it got (the routing id and delimiter too), then the peer's key.
        let server = try Self.server(curve: (serverKeys.secretKey, [clientKeys.publicKey])) { request in
            let reply = request.frames + [Data((request.peerKey ?? "-").utf8)]
            guard request.frames.last == Data("later".utf8) else { return reply }
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: 0.01)
                later.withLock { $0 }?.send(reply)
            }
            return nil
        }
        later.withLock { $0 = server }
        defer { server.close() }

        let role = CurveRole.client(clientKeys, serverKey: serverKeys.publicKey)
        let req = try Self.client(.request, to: server.endpoint, curve: role)
        defer { req.close() }
        let big = Data(repeating: 0x5A, count: 70_000)
        for (index, word) in ["now", "later", "now", "later"].enumerated() {
            try req.send([Data("\(index)".utf8), big, Data(word.utf8)])
            let reply = try req.receiveMessage()
            #expect(reply == [Data("\(index)".utf8), big, Data(word.utf8), Data(clientKeys.publicKey.utf8)])
        }
        // A DEALER sends no delimiter of its own: the routing id, then its frames.
        let dealer = try Self.client(.dealer, to: server.endpoint, curve: role)
        defer { dealer.close() }
        try dealer.send([Data("later".utf8)])
        #expect(try dealer.receiveMessage() == [Data("later".utf8), Data(clientKeys.publicKey.utf8)])

        let refused = try Self.client(.request, to: server.endpoint, curve: .client(stranger, serverKey: serverKeys.publicKey))
        defer { refused.close() }
        try refused.set(.receiveTimeout(milliseconds: 500))
        try refused.send([Data("now".utf8)])
        #expect(try refused.receiveMessage() == nil, "no answer within the timeout")
        // Plaintext to a CURVE server: no handshake, no answer.
        let plain = try Self.client(.request, to: server.endpoint)
        defer { plain.close() }
        try plain.set(.receiveTimeout(milliseconds: 500))
        try plain.send([Data("now".utf8)])
        #expect(try plain.receiveMessage() == nil, "no answer within the timeout")
    }

    @Test("a request past the limits reaches the handler marked truncated, its connection read on; a frame past the frame limit ends the connection")
    func limits() throws {
        let seen = Mutex<[(count: Int, truncated: Bool)]>([])
        let server = try Self.server { request in
            seen.withLock { $0.append((request.frames.count, request.truncated)) }
            return [request.frames[0], Data(), Data("\(request.truncated)".utf8)]
        }
        defer { server.close() }
        let req = try Self.client(.request, to: server.endpoint)
        defer { req.close() }
        // Four frames kept: the delimiter and three; the fourth and fifth are dropped.
        try req.send((0..<5).map { Data("\($0)".utf8) })
        #expect(try req.receiveMessage() == [Data("true".utf8)])
        try req.send([Data(repeating: 1, count: 100_000), Data(repeating: 2, count: 100_000), Data(repeating: 3, count: 100)])
        #expect(try req.receiveMessage() == [Data("true".utf8)])
        try req.send([Data("fine".utf8)])
        #expect(try req.receiveMessage() == [Data("false".utf8)])
        #expect(seen.withLock { $0.map(\.truncated) } == [true, true, false])
        #expect(seen.withLock { $0.first?.count } == 5, "the routing id and the four frames kept")

        try req.set(.receiveTimeout(milliseconds: 500))
        try req.send([Data(repeating: 3, count: 150_100)])
        #expect(try req.receiveMessage() == nil, "no answer within the timeout")
        #expect(seen.withLock { $0.count } == 3, "the oversized frame never reached the handler")
    }

    @Test("a connection with as many requests waiting as allowed is read no more until they are answered")
    func unansweredBound() throws {
        let waiting = Mutex<[[Data]]>([])
        let server = try Self.server(configure: { $0.maxUnanswered = 3 }) { request in
            waiting.withLock { $0.append(request.frames) }
            return nil
        }
        defer { server.close() }
        let dealer = try Self.client(.dealer, to: server.endpoint)
        defer { dealer.close() }
        // 2 MB, more than one read takes: what was read is handed on, and then no more.
        let count = 500, padding = Data(repeating: 7, count: 4_000)
        for index in 0..<count { try dealer.send([Data("\(index)".utf8), padding]) }
        Thread.sleep(forTimeInterval: 0.3)
        let handedOn = waiting.withLock { $0.count }
        #expect(handedOn >= 3 && handedOn < 100, "\(handedOn) handed on")
        var answered: [Data] = []
        let deadline = Date().addingTimeInterval(10)
        while answered.count < count, Date() < deadline {
            for frames in waiting.withLock({ requests in defer { requests = [] }; return requests }) {
                server.send(Array(frames.prefix(2)))
            }
            while let reply = try? dealer.receive(wait: false, limits: nil) { answered += reply.frames }
            Thread.sleep(forTimeInterval: 0.002)
        }
        #expect(answered == (0..<count).map { Data("\($0)".utf8) }, "each answered once, in order")
    }

    @Test("a libzmq client that answers the heartbeats keeps its connection; a peer that does not is dropped")
    func heartbeats() throws {
        let routingIDs = Mutex<Set<Data>>([])
        let server = try Self.server(configure: {
            $0.heartbeatInterval = .milliseconds(100)
            $0.heartbeatTimeout = .milliseconds(300)
        }) { request in
            routingIDs.withLock { _ = $0.insert(request.frames[0]) }
            return request.frames
        }
        defer { server.close() }
        let req = try Self.client(.request, to: server.endpoint)
        defer { req.close() }
        try req.send([Data("before".utf8)])
        #expect(try req.receiveMessage() == [Data("before".utf8)])
        Thread.sleep(forTimeInterval: 1)
        try req.send([Data("after".utf8)])
        #expect(try req.receiveMessage() == [Data("after".utf8)])
        #expect(routingIDs.withLock { $0.count } == 1, "the same connection before and after a second of silence")

        // A peer that greets, says READY, and then nothing: not even PONG.
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        guard case .tcp(let host, let port) = try ZMTPServer.bindAddress(server.endpoint) else { throw ZMTPProtocolError(description: "not tcp") }
        let silent = try ClientBootstrap(group: group).connect(host: host, port: port).wait()
        var hello = silent.allocator.buffer(capacity: 128)
        ZMTPWire.writeGreeting(mechanism: "NULL", into: &hello)
        ZMTPWire.writeFrame(ZMTPWire.command("READY", ZMTPWire.properties([("Socket-Type", "DEALER")])), flags: ZMTPWire.command, into: &hello)
        try silent.writeAndFlush(hello).wait()
        let closed = Date()
        let ended = DispatchSemaphore(value: 0)
        silent.closeFuture.whenComplete { _ in ended.signal() }
        #expect(ended.wait(timeout: .now() + 3) == .success, "dropped once silent past the timeout")
        #expect(Date().timeIntervalSince(closed) >= 0.2)
    }

    @Test("the edge's link talks to it under CURVE with long sealed frames; with a key not allowed it is told why (ERROR 400)")
    func edgeLink() async throws {
        let serverKeys = try CurveKeyPair.generate(), clientKeys = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let server = try Self.server(curve: (serverKeys.secretKey, [clientKeys.publicKey])) { request in
            // The routing id and delimiter, then a reply to the envelope in frame 0, attachments echoed.
            guard request.frames.count >= 3, let envelope = try? RequestEnvelope.decode(frames: Array(request.frames.dropFirst(2))) else {
                return nil
            }
            return Array(request.frames.prefix(2)) + [ReplyEnvelope.success(id: envelope.id, body: .object(envelope.body))]
                + request.frames.dropFirst(3)
        }
        defer { server.close() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let link = try ZMTPLink(service: "toy", endpoint: server.endpoint, curve: .client(clientKeys, serverKey: serverKeys.publicKey),
                                timeout: 2, group: group)
        let big = Data(repeating: 0x5A, count: 70_000)
        for index in 0..<20 {
            let id = "sealed-\(index)"
            let frames = [RequestEnvelope.encode(id: id, op: "toy.echo", token: nil, origin: nil,
                                                 body: .object(JSONObject([("n", .number(.integer(Int64(index))))]))), big]
            let reply = try await withCheckedThrowingContinuation { continuation in
                link.send(frames, id: id, tries: 1) { continuation.resume(with: $0) }
            }
            guard case .success(let body) = ReplyEnvelope.decode(reply[0]).result else { throw ZMTPProtocolError(description: "\(reply)") }
            #expect(body["n"] == .number(.integer(Int64(index))))
            #expect(reply.dropFirst() == [big])
        }
        link.close()

        let (logger, log) = RecordingLog.logger()
        let refused = try ZMTPLink(service: "toy", endpoint: server.endpoint, curve: .client(stranger, serverKey: serverKeys.publicKey),
                                   timeout: 0.5, group: group, logger: logger)
        let outcome = await withCheckedContinuation { continuation in
            refused.send([RequestEnvelope.encode(id: "no", op: "toy.echo", token: nil, origin: nil, body: .object(JSONObject()))],
                         id: "no", tries: 1) { continuation.resume(returning: $0) }
        }
        if case .success = outcome { Issue.record("a key the server does not allow was answered") }
        let logged = log.all.map(\.1)
        #expect(logged.contains { $0.contains("ERROR 400") }, "\(logged)")
        refused.close()
        try await group.shutdownGracefully()
    }
}
