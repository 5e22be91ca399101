import Contracts
import EdgeFixtures
import Foundation
import ServiceKitTesting
import TestThreads
import Testing
import Wire

/// Each limit EDGE.md states, over the wire, at its edge: one past it is refused the
/// way the table says, and what is within it is served.
@Suite("EDGE.md's limits over the wire", .serialized, .ownThread)
struct EdgeLimitsTests {
    /// A request head with `extra` header fields besides `Host` and `Connection`.
    static func head(_ path: String, fields extra: Int, close: Bool) -> String {
        "GET \(path) HTTP/1.1\r\nHost: x\r\n" + (close ? "Connection: close\r\n" : "")
            + (0..<extra).map { "X-F\($0): v\r\n" }.joined() + "\r\n"
    }

    @Test("100 header fields are served and 101 are 431, as are headers over 16 KiB: on a connection's first request and on a later one")
    func headerLimits() throws {
        let stack = try EdgeStack("header-limits")
        // Host and Connection are two of the 100.
        for (extra, status) in [(98, 200), (99, 431)] {
            let first = try RawConnection(port: stack.port)
            first.send(Self.head("/health/live", fields: extra, close: true))
            #expect(try first.receiveResponse().status == status, "\(extra + 2) fields, first request")

            let later = try RawConnection(port: stack.port)
            later.send(Self.head("/health/live", fields: 0, close: false))
            #expect(try later.receiveResponse().status == 200)
            later.send(Self.head("/health/live", fields: extra, close: true))
            let reply = try later.receiveResponse()
            #expect(reply.status == status, "\(extra + 2) fields, a later request: \(reply)")
            if status == 431 { #expect(reply.header("Connection") == "close" && later.closesWithin(2)) }
        }
        let padding = "X-Padding: " + String(repeating: "p", count: 20_000) + "\r\n"
        let big = try RawConnection(port: stack.port)
        big.send("GET /health/live HTTP/1.1\r\nHost: x\r\n" + padding + "\r\n")
        #expect(try big.receiveResponse().status == 431)
        let bigLater = try RawConnection(port: stack.port)
        bigLater.send(Self.head("/health/live", fields: 0, close: false))
        #expect(try bigLater.receiveResponse().status == 200)
        bigLater.send("GET /health/live HTTP/1.1\r\nHost: x\r\n" + padding + "\r\n")
        #expect(try bigLater.receiveResponse().status == 431)
    }

    @Test("a body that sends nothing for 30 s is closed, and so is a kept-alive connection with no new request for 30 s (here with a longer header timeout)")
    func thirtySecondsOfSilence() throws {
        let stack = try EdgeStack("silence", environment: ["HEREABOUTS_EDGE_HEADER_TIMEOUT": "120", "HEREABOUTS_EDGE_BODY_TIMEOUT": "120"])
        let idle = try RawConnection(port: stack.port)
        idle.send(Self.head("/health/live", fields: 0, close: false))
        #expect(try idle.receiveResponse().status == 200)
        let stalled = try RawConnection(port: stack.port)
        stalled.send("POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"lo")
        let started = Date()
        #expect(stalled.closesWithin(45), "a body stalled mid-way stays open")
        #expect(idle.closesWithin(15), "an idle kept-alive connection stays open")
        let waited = Date().timeIntervalSince(started)
        #expect(waited > 25 && waited < 42, "closed after \(waited) s")
    }

    @Test("an import's body may be 4 MiB (one past is 413 before it is read); what the edge passes on is the compact JSON, which catalogue limits to 1 MiB")
    func importBody() throws {
        let stack = try EdgeStack("import-limit")
        let token = try stack.register("feed@example.org").accessToken
        let over = try RawConnection(port: stack.port)
        over.send("POST /v1/posts/import HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \(token)\r\nContent-Type: application/json\r\n"
                  + "Content-Length: \(4 * 1024 * 1024 + 1)\r\n\r\n")
        let refused = try over.receiveResponse()
        #expect(refused.status == 413 && refused.problemCode == "too_large" && refused.header("Connection") == "close", "\(refused)")

        // 3 MiB as a feed's pretty printer writes it: mostly indentation.
        let indent = String(repeating: " ", count: 11_000)
        let posts = (0..<300).map { number in
            "\n\(indent){\"ref\": \"stall-\(number)\", \"kind\": \"offer\", \"title\": \"Stall \(number)\", \"lat\": 52.09, \"lon\": 5.12}"
        }
        let pretty = Data(("{\"posts\": [" + posts.joined(separator: ",") + "\n]}").utf8)
        #expect(pretty.count > 3 * 1024 * 1024 && pretty.count < 4 * 1024 * 1024)
        let imported = try stack.client.signed(token).send("POST", "/v1/posts/import", body: pretty, contentType: "application/json")
        #expect(imported.status == 200, "\(imported.text.prefix(300))")
        #expect(try imported.decode(ImportReply.self).created == 300, "\(imported.text.prefix(300))")

        // Compact, over 1 MiB: the edge takes it in, catalogue refuses it for its size.
        let long = String(repeating: "x", count: 1_100)
        let compact = Data(("{\"posts\":[" + (0..<1_000).map { "{\"ref\":\"r\($0)\",\"kind\":\"offer\",\"title\":\"T\",\"text\":\"\(long)\",\"lat\":52.09,\"lon\":5.12}" }
            .joined(separator: ",") + "]}").utf8)
        #expect(compact.count > 1024 * 1024 && compact.count < 4 * 1024 * 1024)
        // (Refused by catalogue before it parsed the envelope: the answer carries the
        // request's id all the same, or the edge, which matches answers by id, would wait for one.)
        let tooBig = try stack.client.signed(token).send("POST", "/v1/posts/import", body: compact, contentType: "application/json")
        #expect(tooBig.status == 413 && tooBig.problemCode == "too_large", "\(tooBig.text.prefix(300))")
    }

    @Test("16 messages sent while a token is checked wait for it; a 17th closes the socket with 1008")
    func messagesDuringTokenCheck() throws {
        let stack = try EdgeStack("waiting")
        let token = try stack.anonymous().accessToken
        let unwatch = String(decoding: JSONWriter.data(.object(["type": "unwatch", "id": "nothing"])), as: UTF8.self)
        let patient = try EventSocketClient(port: stack.port)
        patient.sendAtOnce([EventSocketClient.authMessage(token)] + Array(repeating: unwatch, count: 16))
        #expect(patient.next(ofType: "ready")?["type"] == "ready")
        #expect(patient.closed(within: 1) == nil)
        patient.close()

        let eager = try EventSocketClient(port: stack.port)
        eager.sendAtOnce([EventSocketClient.authMessage(token)] + Array(repeating: unwatch, count: 17))
        let closed = eager.closed()
        #expect(closed?.code == 1008 && closed?.reason.contains("while a token is checked") == true, "\(String(describing: closed))")
    }

    @Test("a reader that reads nothing while more than 1,000 events wait for it is closed with 1008; other sockets get theirs")
    func slowReader() throws {
        let stack = try EdgeStack("slow-reader", environment: ["HEREABOUTS_RATE_LIMIT": "0", "HEREABOUTS_LOG_LEVEL": "debug"])
        let reader = try stack.register("reader@example.org"), writer = try stack.register("writer@example.org")
        let slow = try EventSocketClient(port: stack.port, paused: true, receiveBuffer: 4_096)
        slow.authenticate(reader.accessToken)
        let brisk = try EventSocketClient(port: stack.port)
        brisk.authenticate(writer.accessToken)
        #expect(brisk.next(ofType: "ready") != nil)
        // The messages go to both members' sockets: the writer's reads them all.
        let text = String(repeating: "a long message to fill the reader's buffers ", count: 80)
        let client = stack.client.signed(writer.accessToken)
        var sent = 0
        while !stack.edgeLog.contains("too many events unread"), sent < 3_000 {
            for _ in 0..<50 {
                let reply = try client.post("/v1/messages", ["to": .string(reader.user.id), "text": .string(text)])
                try #require(reply.status == 201, "\(reply)")
                sent += 1
            }
        }
        try #require(stack.edgeLog.contains("too many events unread"), "no overflow after \(sent) messages")
        // Reading now, it gets what was queued before the overflow, then the close.
        slow.resume()
        let closed = slow.closed(within: 20)
        #expect(closed?.code == 1008 && closed?.reason == "too many events unread", "\(String(describing: closed)) after \(sent) messages")
        var received = 0
        while brisk.next(ofType: "chat.message", timeout: 5) != nil, received < sent { received += 1 }
        #expect(received == sent, "the writer's own socket got \(received) of \(sent)")
    }
}
