import Foundation
import TestThreads
import Testing
import ZeroMQ

@Suite("ZeroMQ sockets", .ownThread)
struct SocketTests {
    let context = Context.shared

    private func uniqueEndpoint() -> String { "inproc://zmq-test-\(UUID().uuidString)" }

    @Test("a request and its reply travel between REQ and REP with all their frames")
    func requestReply() throws {
        let endpoint = uniqueEndpoint()
        let server = try context.makeSocket(.reply)
        try server.bind(endpoint)
        let client = try context.makeSocket(.request)
        try client.connect(endpoint)

        try client.send([Data("hello".utf8), Data([0, 1, 2])])
        let request = try #require(try server.receiveMessage())
        #expect(request == [Data("hello".utf8), Data([0, 1, 2])])
        try server.send([Data("world".utf8), Data()])
        #expect(try client.receiveMessage() == [Data("world".utf8), Data()])
    }

    @Test("a ROUTER sees the peer's routing id and the empty delimiter a REQ adds")
    func routerEnvelope() throws {
        let endpoint = uniqueEndpoint()
        let router = try context.makeSocket(.router)
        try router.bind(endpoint)
        let client = try context.makeSocket(.request)
        try client.set(.routingID(Data("peer-1".utf8)))
        try client.connect(endpoint)

        try client.send(Data("ping".utf8))
        let frames = try #require(try router.receiveMessage())
        #expect(frames == [Data("peer-1".utf8), Data(), Data("ping".utf8)])
        try router.send([frames[0], Data(), Data("pong".utf8)])
        #expect(try client.receiveMessage() == [Data("pong".utf8)])
    }

    @Test("a receive with a timeout returns nil when nothing arrives")
    func receiveTimeout() throws {
        let socket = try context.makeSocket(.pull)
        try socket.bind(uniqueEndpoint())
        try socket.set(.receiveTimeout(milliseconds: 20))
        #expect(try socket.receiveMessage() == nil)
        #expect(try socket.receiveMessage(wait: false) == nil)
    }

    @Test("a poller reports which socket has input, and times out when none does")
    func poller() throws {
        let endpoint = uniqueEndpoint()
        let pull = try context.makeSocket(.pull)
        try pull.bind(endpoint)
        let idle = try context.makeSocket(.pull)
        try idle.bind(uniqueEndpoint())
        let push = try context.makeSocket(.push)
        try push.connect(endpoint)

        var poller = Poller()
        let pullIndex = poller.addReadable(pull)
        let idleIndex = poller.addReadable(idle)
        #expect(try poller.poll(timeout: 10) == 0)
        try push.send(Data("x".utf8))
        #expect(try poller.poll(timeout: 1000) == 1)
        #expect(poller.isReadable(pullIndex))
        #expect(!poller.isReadable(idleIndex))
    }

    @Test("a peer that sends a frame over ZMQ_MAXMSGSIZE is disconnected and its message dropped")
    func maxMessageSize() throws {
        let router = try context.makeSocket(.router)
        try router.set(.maxMessageSize(bytes: 1024))
        try router.set(.receiveTimeout(milliseconds: 300))
        try router.bind("tcp://127.0.0.1:*")
        let endpoint = router.lastEndpoint
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))

        let big = try context.makeSocket(.dealer)
        try big.connect(endpoint)
        try big.send([Data(), Data(repeating: 7, count: 4096)])
        #expect(try router.receiveMessage() == nil)

        let small = try context.makeSocket(.dealer)
        try small.connect(endpoint)
        try small.send([Data(), Data("ok".utf8)])
        let frames = try #require(try router.receiveMessage())
        #expect(frames.last == Data("ok".utf8))
    }

    @Test("a subscriber gets only the topics it subscribed to")
    func publishSubscribe() throws {
        let endpoint = uniqueEndpoint()
        let publisher = try context.makeSocket(.publish)
        try publisher.bind(endpoint)
        let subscriber = try context.makeSocket(.subscribe)
        try subscriber.set(.subscribe(Data("user/1/".utf8)))
        try subscriber.set(.receiveTimeout(milliseconds: 1000))
        try subscriber.connect(endpoint)
        // inproc connects at once, but the subscription travels asynchronously.
        Thread.sleep(forTimeInterval: 0.05)

        try publisher.send([Data("user/12/".utf8), Data("other".utf8)])
        try publisher.send([Data("user/1/".utf8), Data("mine".utf8)])
        #expect(try subscriber.receiveMessage() == [Data("user/1/".utf8), Data("mine".utf8)])
    }

    @Test("bind errors carry libzmq's message")
    func bindError() throws {
        let socket = try context.makeSocket(.router)
        #expect {
            try socket.bind("nonsense://x")
        } throws: { error in
            guard let error = error as? ZMQError else { return false }
            return error.description.contains("zmq_bind(nonsense://x)") && !error.message.isEmpty
        }
    }
}

@Suite("CurveZMQ keys", .ownThread)
struct CurveTests {
    @Test("generated keys are 40 characters of Z85 and the public key derives from the secret")
    func keyPair() throws {
        let pair = try CurveKeyPair.generate()
        #expect(pair.publicKey.utf8.count == 40)
        #expect(pair.secretKey.utf8.count == 40)
        #expect(try CurveKeyPair.publicKey(forSecretKey: pair.secretKey) == pair.publicKey)
        let raw = try #require(Z85.decode(pair.publicKey))
        #expect(raw.count == 32)
        #expect(Z85.encode(raw) == pair.publicKey)
    }

    @Test("a CURVE client that knows the server key talks to a CURVE server")
    func curveHandshake() throws {
        #expect(Context.has("curve"))
        let server = try CurveKeyPair.generate()
        let client = try CurveKeyPair.generate()
        let context = Context.shared

        let router = try context.makeSocket(.router)
        try router.set(.curveServer(true))
        try router.set(.curveSecretKey(server.secretKey))
        try router.set(.receiveTimeout(milliseconds: 2000))
        try router.bind("tcp://127.0.0.1:*")

        let dealer = try context.makeSocket(.dealer)
        try dealer.set(.curveServerKey(server.publicKey))
        try dealer.set(.curvePublicKey(client.publicKey))
        try dealer.set(.curveSecretKey(client.secretKey))
        try dealer.connect(router.lastEndpoint)
        try dealer.send([Data(), Data("secret".utf8)])

        let frames = try #require(try router.receiveMessage())
        #expect(frames.last == Data("secret".utf8))
    }
}
