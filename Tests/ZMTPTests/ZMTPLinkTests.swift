import Contracts
import Foundation
import Logging
import NIOCore
import NIOEmbedded
import NIOPosix
import ServiceClient
import Synchronization
import TestThreads
import Testing
import Wire
@testable import ZMTP
import ZeroMQ

/// A libzmq ROUTER on its own thread, as a service's front is: what ZMTP written by
/// NIO must be indistinguishable from a libzmq DEALER to.
private final class Router: Sendable {
    let endpoint: String
    private final class Flag: Sendable { let raised = Atomic<Bool>(false) }
    private let stop = Flag()
    private let thread: ServiceThread
    /// The context made for this router alone, terminated by `close()`.
    private let ownContext: Context?

    /// Binds `endpoint` (a `*` port is chosen) and answers each request with what
    /// `answer` returns for it (nil: no answer).
    /// - Parameter given: a context to share; nil for one of its own. A ROUTER closed with
    ///   linger 0 is torn down by its context's I/O thread later, and a connection that thread
    ///   accepted meanwhile can outlive the socket, taking requests nobody reads: with the
    ///   shared context, `droppedTryGoesAgain`'s third router never saw its request once in
    ///   37 runs beside two busy loops (and a whole `swift test` beside api-check hung on it).
    ///   Terminating the router's own context on `close()` ends every connection it had
    ///   before the next router binds the port (130 runs since, none lost).
    init(_ endpoint: String, heartbeat: Int32? = nil, curve: CurveRole? = nil, context given: Context? = nil,
         answer: @escaping @Sendable (_ envelope: RequestEnvelope, _ count: Int) -> Data?) throws {
        let context = try given ?? Context()
        ownContext = given == nil ? context : nil
        let bound = Mutex<Result<String, any Error>?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let stop = self.stop
        thread = ServiceThread(name: "router") {
            let router: Socket
            do {
                router = try context.makeSocket(.router)
                try router.set(.linger(milliseconds: 0))
                try router.set(.receiveTimeout(milliseconds: 20))
                if let heartbeat {
                    try router.set(.heartbeatInterval(milliseconds: heartbeat))
                    try router.set(.heartbeatTimeout(milliseconds: heartbeat * 3))
                }
                try router.secure(curve)
                // The port of a ROUTER closed a moment ago is let go by libzmq's I/O thread
                // a little later: bound again, it may still be in use.
                for attempt in 1... {
                    do {
                        try router.bind(endpoint)
                        break
                    } catch where attempt < 100 {
                        Thread.sleep(forTimeInterval: 0.02)
                    }
                }
                bound.withLock { $0 = .success(router.lastEndpoint) }
            } catch {
                bound.withLock { $0 = .failure(error) }
                ready.signal()
                return
            }
            ready.signal()
            defer { router.close() }
            var count = 0
            while !stop.raised.load(ordering: .relaxed) {
                guard let frames = try? router.receiveMessage(), frames.count >= 3,
                      let envelope = try? RequestEnvelope.decode(frames: Array(frames.dropFirst(2))) else { continue }
                count += 1
                if let reply = answer(envelope, count) { _ = try? router.send([frames[0], Data(), reply]) }
            }
        }
        ready.wait()
        do {
            self.endpoint = try bound.withLock { try $0!.get() }
        } catch {
            ownContext?.terminate()
            throw error
        }
    }

    func close() {
        stop.raised.store(true, ordering: .relaxed)
        thread.join()
        ownContext?.terminate()
    }

    static func echo(_ envelope: RequestEnvelope, _: Int) -> Data? {
        ReplyEnvelope.success(id: envelope.id, body: .object(envelope.body))
    }
}

private func request(_ id: String, _ body: JSONObject = JSONObject()) -> [Data] {
    [RequestEnvelope.encode(id: id, op: "toy.echo", token: nil, origin: nil, body: .object(body))]
}

/// Keeps the lines logged through it, for tests that check what an operator is told.
struct RecordingLog: LogHandler {
    final class Lines: Sendable {
        let lines = Mutex<[(Logger.Level, String)]>([])
        var all: [(Logger.Level, String)] { lines.withLock { $0 } }
    }

    let recorded: Lines
    var logLevel = Logger.Level.trace
    var metadata = Logger.Metadata()

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        let problem = event.metadata?["problem"].map { " (\($0))" } ?? ""
        recorded.lines.withLock { $0.append((event.level, "\(event.message)\(problem)")) }
    }

    static func logger() -> (Logger, Lines) {
        let lines = Lines()
        return (Logger(label: "test") { _ in RecordingLog(recorded: lines) }, lines)
    }
}

/// A TCP port just freed: nothing listens there (yet).
private func freedEndpoint() throws -> String {
    let probe = try Context.shared.makeSocket(.router)
    try probe.bind("tcp://127.0.0.1:*")
    defer { probe.close() }
    return probe.lastEndpoint
}

/// Waits until the ids a test's service saw meet `condition`; fails the test after `seconds` (a request the
/// link never delivered would otherwise keep the test waiting for ever).
private func waitUntil(_ what: String, seen: borrowing Mutex<[String]>, seconds: Double = 10,
                       _ condition: ([String]) -> Bool) async throws {
    let deadline = ProcessInfo.processInfo.systemUptime + seconds
    while !seen.withLock({ condition($0) }) {
        guard ProcessInfo.processInfo.systemUptime < deadline else {
            throw ZMTPProtocolError(description: "not within \(seconds) s: \(what); the service saw \(seen.withLock { $0 })")
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

private func call(_ link: ZMTPLink, _ frames: [Data], id: String, tries: Int = 1) async -> Result<[Data], any Error> {
    await withCheckedContinuation { continuation in
        link.send(frames, id: id, tries: tries) { continuation.resume(returning: $0) }
    }
}

@Suite("ZMTP from the event loops (ZMTPLink)", .ownThread)
struct ZMTPLinkTests {
    @Test("requests from tasks and from the loops are answered, each with its own reply, over TCP and Unix sockets",
          arguments: ["tcp://127.0.0.1:*", "ipc:///tmp/hereabouts-zmtp-test-\(UUID().uuidString).sock"])
    func answers(endpoint: String) async throws {
        let router = try Router(endpoint, answer: Router.echo)
        defer { router.close() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let link = try ZMTPLink(service: "toy", endpoint: router.endpoint, timeout: 5, group: group)
        let wrong = try await withThrowingTaskGroup(of: Int.self) { tasks in
            for caller in 0..<4 {
                tasks.addTask {
                    var wrong = 0
                    for sequence in 0..<300 {
                        let number = Int64(caller * 1_000 + sequence)
                        let frames = request("c\(caller)-\(sequence)", JSONObject([("n", .number(.integer(number)))]))
                        // Half the callers ask from a loop, as the edge's handlers do.
                        let result: Result<[Data], any Error> = if caller % 2 == 0 {
                            await call(link, frames, id: "c\(caller)-\(sequence)")
                        } else {
                            await withCheckedContinuation { continuation in
                                group.next().execute {
                                    link.send(frames, id: "c\(caller)-\(sequence)", tries: 1) { continuation.resume(returning: $0) }
                                }
                            }
                        }
                        guard case .success(let reply) = result, case .success(let body) = ReplyEnvelope.decode(reply[0]).result,
                              body["n"] == .number(.integer(number)) else {
                            wrong += 1
                            continue
                        }
                    }
                    return wrong
                }
            }
            return try await tasks.reduce(0, +)
        }
        #expect(wrong == 0)
        link.close()
        try await group.shutdownGracefully()
    }

    @Test("a try with no answer is sent again with the same id; after the last the caller hears unavailable")
    func retries() async throws {
        let seen = Mutex<[String]>([])
        // Drops the first try of each request and answers the second.
        let router = try Router("tcp://127.0.0.1:*") { envelope, count in
            seen.withLock { $0.append(envelope.id) }
            return count % 2 == 0 ? Router.echo(envelope, count) : nil
        }
        defer { router.close() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let link = try ZMTPLink(service: "toy", endpoint: router.endpoint, timeout: 0.3, group: group)
        let answered = await call(link, request("retry-me"), id: "retry-me", tries: 2)
        #expect((try? answered.get()) != nil)
        #expect(seen.withLock { $0 } == ["retry-me", "retry-me"])
        let unanswered = await call(link, request("once-only"), id: "once-only", tries: 1)
        #expect(throws: ServiceError.self) { try unanswered.get() }
        if case .failure(let error as ServiceError) = unanswered { #expect(error.code == .unavailable) }
        link.close()
        try await group.shutdownGracefully()
    }

    @Test("a second request with an id in flight is refused; nobody listening is unavailable")
    func conflictAndNobody() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let endpoint = try freedEndpoint()
        let link = try ZMTPLink(service: "toy", endpoint: endpoint, timeout: 0.3, group: group)
        // Both sent from this task: they reach the one loop in this order (a first request
        // started in a task of its own and given time to go first was not there yet on a
        // loaded machine, and the second was sent first).
        let (firstAnswer, answered) = AsyncStream.makeStream(of: Result<[Data], any Error>.self)
        link.send(request("twice"), id: "twice", tries: 2) { answered.yield($0) }
        let second = await call(link, request("twice"), id: "twice")
        if case .failure(let error as ServiceError) = second { #expect(error.code == .conflict) } else { Issue.record("\(second)") }
        let started = ProcessInfo.processInfo.systemUptime
        var answers = firstAnswer.makeAsyncIterator()
        let first = await answers.next()
        if case .failure(let error as ServiceError)? = first { #expect(error.code == .unavailable) } else { Issue.record("answered") }
        #expect(ProcessInfo.processInfo.systemUptime - started < 2)
        link.close()
        try await group.shutdownGracefully()
    }

    @Test("the connection comes back when the service does, and the service's heartbeats keep it")
    func reconnectsAndHeartbeats() async throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // Heartbeats every 100 ms, the peer dropped after 300 ms without an answer to one.
        var router = try Router("tcp://127.0.0.1:*", heartbeat: 100, answer: Router.echo)
        let endpoint = router.endpoint
        let link = try ZMTPLink(service: "toy", endpoint: endpoint, timeout: 1, group: group)
        #expect((try? await call(link, request("a"), id: "a").get()) != nil)
        try await Task.sleep(for: .milliseconds(1_200))
        #expect((try? await call(link, request("b"), id: "b").get()) != nil)
        #expect(try link.handshakes() == 1, "the connection was dropped: heartbeats not answered")
        router.close()
        router = try Router(endpoint, answer: Router.echo)
        defer { router.close() }
        #expect((try? await call(link, request("c"), id: "c", tries: 3).get()) != nil)
        #expect(try link.handshakes() == 2)
        link.close()
        try await group.shutdownGracefully()
    }
}

@Suite("ZMTP frames from the peer")
struct ZMTPDecoderTests {
    private func decoder(_ bytes: [UInt8]) throws -> [ZMTPInbound] {
        let channel = EmbeddedChannel(handler: ByteToMessageHandler(ZMTPDecoder(maxFrameBytes: 1_000)))
        var greeting = ByteBuffer()
        ZMTPWire.writeGreeting(mechanism: "CURVE", into: &greeting)
        try channel.writeInbound(greeting)
        try channel.writeInbound(ByteBuffer(bytes: bytes))
        var read: [ZMTPInbound] = []
        while let inbound = try channel.readInbound(as: ZMTPInbound.self) { read.append(inbound) }
        return read
    }

    @Test("frames with their flags, a long one by its 8-byte size; a message's frames gathered until the last")
    func frames() throws {
        var bytes: [UInt8] = [0x01, 0, 0x01, 2, 0x68, 0x69, 0x02] + withUnsafeBytes(of: UInt64(300).bigEndian, Array.init)
        bytes += [UInt8](repeating: 0x61, count: 300)
        bytes += [0x04, 7, 4] + Array("PING".utf8) + [0, 1]
        let read = try decoder(bytes)
        #expect(read.count == 5)
        guard case .greeting(3, "CURVE") = read[0], case .frame(0x04, let ping) = read[4] else {
            Issue.record("\(read)")
            return
        }
        #expect(ZMTPWire.parseCommand(ping)?.name == "PING")
        var assembler = MessageAssembler(maxFrames: 3, maxBytes: 1_000)
        var message: [ByteBuffer]?
        for case .frame(let flags, let body) in read[1...3] {
            #expect(message == nil)
            message = try assembler.add(body, more: flags & ZMTPWire.more != 0)
        }
        #expect(message?.map(\.readableBytes) == [0, 2, 300])
    }

    @Test("a frame larger than the limit, or a message of too many frames or bytes, is refused before it is kept")
    func limits() throws {
        let huge: [UInt8] = [0x02] + withUnsafeBytes(of: UInt64.max.bigEndian, Array.init)
        #expect(throws: ZMTPProtocolError.self) { try decoder(huge) }
        var assembler = MessageAssembler(maxFrames: 2, maxBytes: 10)
        _ = try assembler.add(ByteBuffer(bytes: [1]), more: true)
        _ = try assembler.add(ByteBuffer(bytes: [2]), more: true)
        #expect(throws: ZMTPProtocolError.self) { try assembler.add(ByteBuffer(bytes: [3]), more: false) }
        var small = MessageAssembler(maxFrames: 5, maxBytes: 10)
        _ = try small.add(ByteBuffer(bytes: [UInt8](repeating: 0, count: 6)), more: true)
        #expect(throws: ZMTPProtocolError.self) { try small.add(ByteBuffer(bytes: [UInt8](repeating: 0, count: 6)), more: false) }
        let notZMTP = EmbeddedChannel(handler: ByteToMessageHandler(ZMTPDecoder(maxFrameBytes: 1_000)))
        #expect(throws: ZMTPProtocolError.self) { try notZMTP.writeInbound(ByteBuffer(bytes: [UInt8](repeating: 0x47, count: 64))) }
    }
}

@Suite("CURVE from the event loops (ZMTPLink)", .ownThread)
struct ZMTPCurveTests {
    @Test("a libzmq CURVE server admits the link's key and answers through the sealed frames, heartbeats included; another key is refused")
    func curve() async throws {
        let server = try CurveKeyPair.generate()
        let client = try CurveKeyPair.generate()
        let stranger = try CurveKeyPair.generate()
        let context = try Context()
        let zap = try ZAPAuthenticator(allowing: [client.publicKey], context: context)
        defer { zap.stop() }
        let router = try Router("tcp://127.0.0.1:*", heartbeat: 100, curve: .server(secretKey: server.secretKey),
                                context: context, answer: Router.echo)
        defer { router.close() }
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        let link = try ZMTPLink(service: "toy", endpoint: router.endpoint, curve: .client(client, serverKey: server.publicKey),
                                timeout: 2, group: group)
        // Attachments and a frame past 255 bytes, so that MORE and long sizes are sealed too.
        let big = Data(repeating: 0x5A, count: 70_000)
        for index in 0..<20 {
            let frames = request("sealed-\(index)", JSONObject([("n", .number(.integer(Int64(index))))])) + [big, Data("x".utf8)]
            let reply = try await call(link, frames, id: "sealed-\(index)").get()
            guard case .success(let body) = ReplyEnvelope.decode(reply[0]).result else { throw ZMTPProtocolError(description: "\(reply)") }
            #expect(body["n"] == .number(.integer(Int64(index))))
        }
        try await Task.sleep(for: .milliseconds(800))
        #expect((try? await call(link, request("after"), id: "after").get()) != nil)
        #expect(try link.handshakes() <= 2, "a connection per loop, kept through the heartbeats")
        link.close()

        let (logger, log) = RecordingLog.logger()
        let refused = try ZMTPLink(service: "toy", endpoint: router.endpoint, curve: .client(stranger, serverKey: server.publicKey),
                                   timeout: 0.5, group: group, logger: logger)
        if case .failure(let error as ServiceError) = await call(refused, request("no"), id: "no") {
            #expect(error.code == .unavailable)
        } else {
            Issue.record("a key the server does not know was answered")
        }
        #expect(try refused.handshakes() == 0)
        // Refused again every 100 ms on each of the two loops' connections: told once a connection.
        let warnings = log.all.filter { $0.0 == .warning }
        #expect(warnings.count == 2, "\(warnings)")
        #expect(warnings.allSatisfy { $0.1.contains("toy ended the connection during the handshake") }, "\(warnings)")
        refused.close()
        try await group.shutdownGracefully()
    }
}

@Suite("ZMTP while the service is away", .ownThread)
struct ZMTPAwayTests {
    @Test("tries given up while the service is away do not keep newer ones out of the queue")
    func staleTriesMakeRoom() async throws {
        let endpoint = try freedEndpoint()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        // Room for 4 waiting tries; each waits 1.5 s.
        let link = try ZMTPLink(service: "toy", endpoint: endpoint, curve: nil, timeout: 1.5, group: group, logger: nil,
                                waitingLimit: 4)
        let early = await withTaskGroup(of: Bool.self) { tasks in
            for index in 0..<4 {
                tasks.addTask {
                    if case .failure = await call(link, request("early-\(index)"), id: "early-\(index)") { return true }
                    return false
                }
            }
            return await tasks.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(early == 4, "nobody listens: all four given up")
        // The queue holds four tries given up; a new one still waits for the service.
        async let late = call(link, request("late"), id: "late")
        try await Task.sleep(for: .milliseconds(100))
        let seen = Mutex<[String]>([])
        let router = try Router(endpoint) { envelope, count in
            seen.withLock { $0.append(envelope.id) }
            return Router.echo(envelope, count)
        }
        #expect((try? await late.get()) != nil, "the try made after the others were given up was sent on reconnect")
        #expect(seen.withLock { $0 } == ["late"])
        router.close()
        link.close()
        try await group.shutdownGracefully()
    }

    @Test("a try on a connection that drops is sent again on the next one at once, not after its timeout")
    func droppedTryGoesAgain() async throws {
        let seen = Mutex<[String]>([])
        // The first service takes the request and goes away without answering.
        var router = try Router("tcp://127.0.0.1:*") { envelope, _ in
            seen.withLock { $0.append(envelope.id) }
            return nil
        }
        let endpoint = router.endpoint
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let link = try ZMTPLink(service: "toy", endpoint: endpoint, timeout: 30, group: group)
        async let answer = call(link, request("dropped"), id: "dropped", tries: 2)
        try await waitUntil("the first service took the request", seen: seen) { !$0.isEmpty }
        router.close()
        let restarted = ProcessInfo.processInfo.systemUptime
        router = try Router(endpoint) { envelope, count in
            seen.withLock { $0.append(envelope.id) }
            return Router.echo(envelope, count)
        }
        #expect((try? await answer.get()) != nil)
        // Well inside the try's 30 s: the reconnect (100 ms) is what it waited for.
        #expect(ProcessInfo.processInfo.systemUptime - restarted < 5)
        #expect(seen.withLock { $0 } == ["dropped", "dropped"])
        router.close()

        // With its last try on the dropped connection, the caller hears at once. The third
        // service answers a probe first: until the link has seen the second one go and
        // connected again, a try would go out on the closed connection and never reach it.
        router = try Router(endpoint) { envelope, count in
            seen.withLock { $0.append(envelope.id) }
            return envelope.id == "probe" ? Router.echo(envelope, count) : nil
        }
        #expect((try? await call(link, request("probe"), id: "probe", tries: 5).get()) != nil)
        async let lastTry = call(link, request("last"), id: "last", tries: 1)
        try await waitUntil("the third service took the request", seen: seen) { $0.contains("last") }
        router.close()
        let dropped = ProcessInfo.processInfo.systemUptime
        if case .failure(let error as ServiceError) = await lastTry { #expect(error.code == .unavailable) } else { Issue.record("answered") }
        #expect(ProcessInfo.processInfo.systemUptime - dropped < 5)
        link.close()
        try await group.shutdownGracefully()
    }

    @Test("a request given up while the service was away is not sent when it comes back; one still being tried is, once")
    func givenUpStaysUnsent() async throws {
        let endpoint = try freedEndpoint()
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let link = try ZMTPLink(service: "toy", endpoint: endpoint, timeout: 0.4, group: group)
        let givenUp = await call(link, request("given-up"), id: "given-up", tries: 1)
        if case .failure(let error as ServiceError) = givenUp { #expect(error.code == .unavailable) } else { Issue.record("\(givenUp)") }
        async let waiting = call(link, request("waiting"), id: "waiting", tries: 10)
        try await Task.sleep(for: .milliseconds(100))
        let seen = Mutex<[String]>([])
        let router = try Router(endpoint) { envelope, count in
            seen.withLock { $0.append(envelope.id) }
            return Router.echo(envelope, count)
        }
        #expect((try? await waiting.get()) != nil)
        try await Task.sleep(for: .milliseconds(300))
        #expect(seen.withLock { $0 } == ["waiting"])
        router.close()
        link.close()
        try await group.shutdownGracefully()
    }
}
