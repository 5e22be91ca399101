import Foundation
@testable import ServiceKit
import Testing
import Wire
import ZeroMQ

@Suite("The server's shared socket")
struct SharedRouterTests {
    private static let limits = MessageLimits(maxFrames: 8, maxBytes: 4096)

    /// A shared ROUTER on a free loopback port, and its endpoint.
    private static func router() throws -> (SharedRouter, String) {
        let socket = try Context.shared.makeSocket(.router)
        try socket.set(.linger(milliseconds: 0))
        try socket.bind("tcp://127.0.0.1:*")
        let endpoint = socket.lastEndpoint
        return (try SharedRouter(socket), endpoint)
    }

    /// Any use of a socket may take the signal off its `ZMQ_FD`; a worker sending a
    /// reply while a request waits must pass the signal on to the front threads.
    @Test("a reply sent while a request waits wakes the front threads, though the send took the socket's signal")
    func sendPassesOnTheSignal() throws {
        let (router, endpoint) = try Self.router()
        defer { router.close() }
        #expect(try router.take(limits: Self.limits, wakingOthers: false) == nil)

        let client = try Context.shared.makeSocket(.dealer)
        try client.set(.linger(milliseconds: 0))
        defer { client.close() }
        try client.connect(endpoint)
        try client.send([Data(), Data("request".utf8)])
        // Let the request arrive and its signal wait in the socket's mailbox.
        Thread.sleep(forTimeInterval: 0.2)
        // A front thread waits (this one, once the send is done); a reply to a peer
        // that has gone (ROUTER drops it) meanwhile: the send reads the mailbox.
        router.idle.add(1, ordering: .relaxed)
        try router.send([Data("gone".utf8), Data(), Data("reply".utf8)], wakingFront: true)
        #expect(router.waitForInput() == .signalled)
        let request = try router.take(limits: Self.limits, wakingOthers: false)
        #expect(request?.frames.last == Data("request".utf8))
    }

    @Test("a front thread that finds nothing waits until a request comes, and takes it")
    func nextWaitsForARequest() throws {
        let (router, endpoint) = try Self.router()
        defer { router.close() }
        let sender = Thread {
            guard let client = try? Context.shared.makeSocket(.dealer), (try? client.connect(endpoint)) != nil else { return }
            // Sent once the front thread below is waiting.
            Thread.sleep(forTimeInterval: 0.1)
            _ = try? client.send([Data(), Data("late".utf8)])
            Thread.sleep(forTimeInterval: 1)
            client.close()
        }
        sender.start()
        guard case .request(let message, let missed) = try router.next(limits: Self.limits, wakingOthers: true) else {
            Issue.record("finished instead")
            return
        }
        #expect(message.frames.last == Data("late".utf8))
        #expect(!missed)
        #expect(router.idle.load(ordering: .relaxed) == 0)
    }

    @Test("finishing ends every wait, now and later")
    func finishEndsWaits() throws {
        let (router, _) = try Self.router()
        defer { router.close() }
        router.finish()
        #expect(router.waitForInput() == .finishing)
        #expect(router.waitForInput() == .finishing)
    }
}
