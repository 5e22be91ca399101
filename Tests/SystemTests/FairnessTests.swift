import Contracts
import EdgeFixtures
import Foundation
import ServiceKitTesting
import Synchronization
import TestThreads
import Testing
import Wire

/// One client cannot starve or lock out everyone else: what one address sends is
/// counted against that address, and served in turn with everyone else's. Clients
/// are told apart by the local address they send from (every 127.x address is this
/// machine's), or, through a trusted proxy, by `X-Forwarded-For`.
@Suite("One client against everyone else", .serialized, .ownThread)
struct FairnessTests {
    @Test("a flood of registrations from one address does not hold another address's logins behind it")
    func registrationFlood() throws {
        // Hashes at the standard cost, as deployed: the flood has to keep the hashing thread busy.
        let stack = try EdgeStack("flood", environment: ["HEREABOUTS_AUTH_PASSWORD_COST": "17"])
        let victim = stack.client.from("127.0.0.2")
        let account: JSONObject = ["login": "victim@example.org", "password": "password1"]
        #expect(try victim.post("/v1/auth/register", ["email": "victim@example.org", "password": "password1"]).status == 201)

        // Sixteen threads from 127.0.0.1 register as fast as they are answered.
        let flooder = stack.client.from("127.0.0.1")
        let created = Atomic<Int>(0), refused = Atomic<Int>(0), stop = Atomic<Bool>(false)
        let threads = (0..<16).map { thread in
            let worker = Thread {
                var number = 0
                while !stop.load(ordering: .relaxed) {
                    number += 1
                    let body: JSONObject = ["email": .string("flood-\(thread)-\(number)@example.org"), "password": "password1"]
                    guard let reply = try? flooder.post("/v1/auth/register", body) else { continue }
                    if reply.status == 201 { created.add(1, ordering: .relaxed) } else { refused.add(1, ordering: .relaxed) }
                }
            }
            worker.start()
            return worker
        }
        defer {
            stop.store(true, ordering: .relaxed)
            stack.stop()
            while threads.contains(where: { !$0.isFinished }) { Thread.sleep(forTimeInterval: 0.05) }
        }
        // The hashing thread is busy with the flood and its queue holds the rest of it.
        let deadline = Date().addingTimeInterval(120)
        while created.load(ordering: .relaxed) < 1, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        try #require(created.load(ordering: .relaxed) >= 1, "no registration of the flood finished")

        for attempt in 0..<3 {
            let before = created.load(ordering: .relaxed)
            let login = try victim.post("/v1/auth/login", account)
            let during = created.load(ordering: .relaxed) - before
            #expect(login.status == 200, "login \(attempt): \(login)")
            // Served in turn: behind the flood's running hash and at most one more, not behind its queue.
            #expect(during <= 3, "login \(attempt) waited for \(during) of the flood's registrations")
        }
        #expect(created.load(ordering: .relaxed) <= 21, "at most a burst of new accounts per address, and the odd one refilled")
    }

    @Test("one address cannot take every socket: past its own cap it is refused, and other addresses still get theirs")
    func socketsPerAddress() throws {
        let stack = try EdgeStack("sockets-address", environment: ["HEREABOUTS_EDGE_MAX_SOCKETS_PER_ADDRESS": "3",
                                                                   "HEREABOUTS_EDGE_MAX_SOCKETS": "5"])
        var first = try (0..<3).map { _ in try EventSocketClient(port: stack.port, source: "127.0.0.1") }
        let refused = try EdgeSocketTests.upgrade(stack.port, source: "127.0.0.1")
        #expect(refused.status == 429 && refused.problemCode == "rate_limited" && refused.text.contains("this address"), "\(refused)")
        #expect(refused.header("Retry-After") != nil)
        let second = try (0..<2).map { _ in try EventSocketClient(port: stack.port, source: "127.0.0.2") }
        let full = try EdgeSocketTests.upgrade(stack.port, source: "127.0.0.3")
        #expect(full.status == 429 && full.text.contains("as many sockets"), "the edge's total still holds: \(full)")
        // A socket closed gives its address's place back.
        first.removeLast().close()
        let again = try eventually("a place for 127.0.0.1 again") { try? EventSocketClient(port: stack.port, source: "127.0.0.1") }
        for socket in first + second + [again] { socket.close() }
    }

    @Test("anonymous accounts are limited per address through the edge, with Retry-After")
    func anonymousPerAddress() throws {
        let stack = try EdgeStack("anonymous-address")
        let client = stack.client.from("127.0.0.5")
        for _ in 0..<20 { #expect(try client.post("/v1/auth/anonymous").status == 201) }
        let refused = try client.post("/v1/auth/anonymous")
        #expect(refused.status == 429 && refused.problemCode == "rate_limited" && refused.header("Retry-After") != nil, "\(refused)")
        #expect(try stack.client.from("127.0.0.6").post("/v1/auth/anonymous").status == 201)
    }

    @Test("an IPv6 client is one client across its /64: for the edge's request budget and the services' alike")
    func ipv6Networks() throws {
        let stack = try EdgeStack("ipv6", environment: ["HEREABOUTS_EDGE_TRUSTED_PROXIES": "127.0.0.1", "HEREABOUTS_EDGE_RATE_LIMIT": "1/25"])
        func from(_ address: String) -> EdgeClient {
            var client = stack.client
            client.headers = [("X-Forwarded-For", address)]
            return client
        }
        // The edge's requests per address: 25 at once from one /64, whichever of its addresses.
        for host in 1...25 { #expect(try from("2001:db8:1:2::\(String(host, radix: 16))").get("/v1/places?q=Utrecht").status == 200) }
        let limited = try from("2001:db8:1:2:ffff::9").get("/v1/places?q=Utrecht")
        #expect(limited.status == 429 && limited.header("Retry-After") != nil, "\(limited)")
        #expect(try from("2001:db8:1:3::1").get("/v1/places?q=Utrecht").status == 200, "the next /64 is another client")
        // auth's anonymous accounts per address, from the origin the edge relays: counted by /64 too.
        for host in 1...20 { #expect(try from("2001:db8:9:9::\(String(host, radix: 16))").post("/v1/auth/anonymous").status == 201) }
        let refused = try from("2001:db8:9:9:abcd::1").post("/v1/auth/anonymous")
        #expect(refused.status == 429 && refused.text.contains("anonymous accounts"), "\(refused)")
    }
}
