import Contracts
import Foundation
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Synchronization
import TestThreads
import Testing
import Wire
import ZeroMQ

@Suite("The Lazy Pirate client", .ownThread)
struct ClientTests {
    @Test("a service that does not answer is unavailable after the bounded tries")
    func unavailable() throws {
        let client = ServiceClient(service: "geo", endpoint: "ipc:///tmp/hereabouts-nobody-\(UUID().uuidString).sock",
                                   timeout: 0.1, tries: 2)
        defer { client.close() }
        do {
            _ = try client.call(HealthAPI.health("geo"), Empty())
            Issue.record("answered")
        } catch let error as ServiceError {
            #expect(error.code == .unavailable)
            #expect(error.message.contains("geo did not answer"))
        }
    }

    @Test("a try that times out is repeated on a fresh socket with the same request id")
    func retriesWithSameID() throws {
        let endpoint = "inproc://lazy-pirate-\(UUID().uuidString)"
        let seenIDs = Mutex<[String]>([])
        let bound = DispatchSemaphore(value: 0)
        let server = ServiceThread(name: "flaky") {
            guard let router = try? Context.shared.makeSocket(.router), (try? router.bind(endpoint)) != nil else { return }
            defer { router.close() }
            bound.signal()
            // Drop the first request on the floor; answer the second.
            for attempt in 0..<2 {
                guard let frames = try? router.receiveMessage(),
                      let envelope = try? RequestEnvelope.decode(frames: Array(frames.dropFirst(2))) else { return }
                seenIDs.withLock { $0.append(envelope.id) }
                if attempt == 1 {
                    let reply = ReplyEnvelope.success(id: envelope.id, body: .object(JSONObject([("count", .number(.integer(7)))])))
                    _ = try? router.send([frames[0], Data(), reply])
                }
            }
        }
        bound.wait()
        let client = ServiceClient(ServiceClient.Configuration(service: "toy", endpoint: endpoint, timeout: 0.3, tries: 3))
        defer { client.close() }
        let reply = try client.call(Op<Empty, CountReply>("toy.count", access: .anyone, effect: .read), Empty(), id: "retry-me")
        server.join()
        #expect(reply.count == 7)
        #expect(seenIDs.withLock { $0 } == ["retry-me", "retry-me"])
    }
}

@Suite("Token verification", .ownThread)
struct TokenVerifierTests {
    @Test("keys are fetched when a token names an unknown kid, at most once per interval")
    func fetchesKeys() throws {
        let key = Curve25519Key()
        let fetches = Atomic<Int>(0)
        let verifier = try TokenVerifier(source: .fetched {
            fetches.add(1, ordering: .relaxed)
            return [key.jwk]
        })
        let caller = try verifier.verify(try key.token(userID: "u1", expires: Date().addingTimeInterval(600)))
        #expect(caller.userID == "u1")
        #expect(caller.sessionID == "s1")
        #expect(fetches.load(ordering: .relaxed) == 1)
        // Cached: no second fetch, and the same caller.
        #expect(try verifier.verify(try key.token(userID: "u1", expires: Date().addingTimeInterval(600))) == caller)
        // A flood of tokens with unknown kids cannot make it fetch on every request.
        let stranger = Curve25519Key()
        for _ in 0..<3 {
            #expect { try verifier.verify(try stranger.token(userID: "u2", expires: Date().addingTimeInterval(600))) } throws: {
                ($0 as? ServiceError)?.message == "the access token is signed with an unknown key"
            }
        }
        #expect(fetches.load(ordering: .relaxed) == 1)
    }

    @Test("requests that arrive during the first fetch wait for its keys instead of being refused")
    func concurrentFirstFetch() throws {
        let key = Curve25519Key()
        let fetches = Atomic<Int>(0)
        let verifier = try TokenVerifier(source: .fetched {
            fetches.add(1, ordering: .relaxed)
            Thread.sleep(forTimeInterval: 0.2)
            return [key.jwk]
        })
        let token = try key.token(userID: "u1", expires: Date().addingTimeInterval(600))
        let admitted = Atomic<Int>(0)
        let threads = (0..<6).map { _ in
            ServiceThread(name: "verify") {
                if (try? verifier.verify(token)) != nil { admitted.add(1, ordering: .relaxed) }
            }
        }
        threads.forEach { $0.join() }
        #expect(admitted.load(ordering: .relaxed) == 6)
        #expect(fetches.load(ordering: .relaxed) == 1)
    }

    @Test("an expired token is refused, also from the cache")
    func expiry() throws {
        let key = Curve25519Key()
        let verifier = try TokenVerifier(source: .fixed([key.jwk]))
        let token = try key.token(userID: "u1", expires: Date().addingTimeInterval(2))
        _ = try verifier.verify(token)
        #expect { try verifier.verify(token, now: Date().addingTimeInterval(5)) } throws: {
            ($0 as? ServiceError)?.message == "the access token has expired"
        }
        #expect { try verifier.verify(try key.token(userID: "u1", expires: Date().addingTimeInterval(-1))) } throws: {
            ($0 as? ServiceError)?.code == .unauthenticated
        }
    }
}

import Crypto

/// An Ed25519 key that signs tokens the way auth does.
struct Curve25519Key {
    let kid = Identifier.random(count: 8)
    let privateKey = Curve25519.Signing.PrivateKey()

    var jwk: PublicKeyJWK { PublicKeyJWK(kid: kid, x: Base64URL.encode(privateKey.publicKey.rawRepresentation)) }

    func token(userID: String, expires: Date) throws -> String {
        let header = Base64URL.encode(Data(#"{"alg":"EdDSA","typ":"JWT","kid":"\#(kid)"}"#.utf8))
        let exp = Int(expires.timeIntervalSince1970)
        let payload = Base64URL.encode(Data(#"{"sub":"\#(userID)","sid":"s1","anon":false,"iat":\#(exp - 900),"exp":\#(exp)}"#.utf8))
        let signature = try privateKey.signature(for: Data("\(header).\(payload)".utf8))
        return "\(header).\(payload).\(Base64URL.encode(signature))"
    }
}

@Suite("The multiplexed client (the edge's)", .ownThread)
struct AsyncClientTests {
    /// Callers send on the link's socket from their own threads while the link's
    /// thread waits on the socket's descriptor, which signals edge-wise: a send that
    /// takes a reply's signal off it must pick the reply up itself. Four callers in
    /// closed loops make that happen often; a reply left unseen waits until the link's
    /// thread wakes for a deadline (up to the 5 s timeout), where a local echo takes
    /// a millisecond: no call may take half the timeout.
    @Test("callers on many threads share one link: every reply reaches its own caller at once, none waits for a deadline")
    func sharedLink() async throws {
        let endpoint = "tcp://127.0.0.1:*"
        let stop = Atomic<Bool>(false)
        let bound = Mutex<String?>(nil)
        let ready = DispatchSemaphore(value: 0)
        let server = ServiceThread(name: "echo") {
            guard let router = try? Context.shared.makeSocket(.router), (try? router.bind(endpoint)) != nil else { return }
            defer { router.close() }
            bound.withLock { $0 = router.lastEndpoint }
            ready.signal()
            try? router.set(.receiveTimeout(milliseconds: 50))
            while !stop.load(ordering: .relaxed) {
                guard let frames = try? router.receiveMessage(),
                      let envelope = try? RequestEnvelope.decode(frames: Array(frames.dropFirst(2))) else { continue }
                _ = try? router.send([frames[0], Data(), ReplyEnvelope.success(id: envelope.id, body: .object(envelope.body))])
            }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            server.join()
        }
        ready.wait()
        let client = try AsyncServiceClient(.init(service: "toy", endpoint: try #require(bound.withLock { $0 }), timeout: 5, tries: 1))
        defer { client.close() }
        let (mismatches, stalls) = try await withThrowingTaskGroup(of: (Int, Int).self) { group in
            for caller in 0..<4 {
                group.addTask {
                    var wrong = 0, stalled = 0
                    for sequence in 0..<500 {
                        let number = Int64(caller * 1_000 + sequence)
                        let sent = ProcessInfo.processInfo.systemUptime
                        let reply = try await client.callRaw(op: "toy.echo", body: .object(JSONObject([("n", .number(.integer(number)))])))
                        if ProcessInfo.processInfo.systemUptime - sent > 2.5 { stalled += 1 }
                        guard case .success(let body) = reply.envelope.result, body["n"] == .number(.integer(number)) else {
                            wrong += 1
                            continue
                        }
                    }
                    return (wrong, stalled)
                }
            }
            return try await group.reduce((0, 0)) { ($0.0 + $1.0, $0.1 + $1.1) }
        }
        #expect(mismatches == 0)
        #expect(stalls == 0, "calls that waited for a deadline to be seen")
    }

    /// A request id comes back when a client retries after a lost answer (an HTTP
    /// `Idempotency-Key`). The tries of the answered requests with that id must not
    /// count against the new one: once they did, and a slow register whose key had
    /// been used twice within the timeout failed with `unavailable` in seconds.
    @Test("the timeouts of answered requests do not use up the tries of a later request with the same id")
    func reusedIDKeepsItsTries() async throws {
        let endpoint = "inproc://async-client-\(UUID().uuidString)"
        let seen = Mutex<[Double]>([])
        let stop = Atomic<Bool>(false)
        let bound = DispatchSemaphore(value: 0)
        let start = ProcessInfo.processInfo.systemUptime
        // Answers the first two tries at once and the third after 2.6 s; any further
        // try (a retry the client should not have sent) gets no answer.
        let server = ServiceThread(name: "slow-third") {
            guard let router = try? Context.shared.makeSocket(.router), (try? router.bind(endpoint)) != nil else { return }
            defer { router.close() }
            bound.signal()
            var delayed: [(at: Double, frames: [Data])] = []
            while !stop.load(ordering: .relaxed) {
                let now = ProcessInfo.processInfo.systemUptime
                while let due = delayed.first, due.at <= now {
                    _ = try? router.send(due.frames)
                    delayed.removeFirst()
                }
                guard let frames = try? router.receiveMessage(wait: false) else {
                    Thread.sleep(forTimeInterval: 0.005)
                    continue
                }
                guard let envelope = try? RequestEnvelope.decode(frames: Array(frames.dropFirst(2))) else { continue }
                let count = seen.withLock { seen in
                    seen.append(now - start)
                    return seen.count
                }
                let reply = [frames[0], Data(), ReplyEnvelope.success(id: envelope.id, body: .object(JSONObject()))]
                switch count {
                case 1, 2: _ = try? router.send(reply)
                case 3: delayed.append((now + 2.6, reply))
                default: break
                }
            }
        }
        defer {
            stop.store(true, ordering: .relaxed)
            server.join()
        }
        bound.wait()
        let client = try AsyncServiceClient(.init(service: "toy", endpoint: endpoint, timeout: 3, tries: 2))
        defer { client.close() }
        _ = try await client.callRaw(op: "toy.write", body: .object(JSONObject()), id: "same-key")
        try await Task.sleep(for: .milliseconds(200))
        _ = try await client.callRaw(op: "toy.write", body: .object(JSONObject()), id: "same-key")
        try await Task.sleep(for: .milliseconds(1000))
        // Answered at ~3.8 s, within its own 3 s; the first two's would end at ~3.0 and ~3.2.
        _ = try await client.callRaw(op: "toy.write", body: .object(JSONObject()), id: "same-key")
        #expect(seen.withLock { $0.count } == 3, "tries at \(seen.withLock { $0 })")
    }
}
