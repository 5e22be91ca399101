import Contracts
import EdgeFixtures
import Foundation
import ServiceKitTesting
import TestThreads
import Testing
import Wire

/// The events WebSocket's rules (EDGE.md), through the real processes: the token
/// first and renewed, closes with their codes, limits per user and in all.
@Suite("The events WebSocket", .serialized, .ownThread)
struct EdgeSocketTests {
    /// A WebSocket upgrade request, raw, for what a refused one is answered.
    static func upgrade(_ port: Int, token: String? = nil, source: String? = nil) throws -> HTTPReply {
        let connection = try RawConnection(port: port, source: source)
        var head = "GET /v1/events HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        connection.send(head + "\r\n")
        return try connection.receiveResponse()
    }

    @Test("the token comes first: none in 10 s, a bad one, text that is not JSON, binary, a frame too large, another user's token: each closes with its code")
    func closes() throws {
        let stack = try EdgeStack("sockets")
        let ann = try stack.anonymous(), bea = try stack.anonymous()

        let silent = try EventSocketClient(port: stack.port)
        let started = Date()
        let badToken = try EventSocketClient(port: stack.port)
        badToken.authenticate("not.a.token")
        #expect(badToken.closed()?.code == 4401)
        let notJSON = try EventSocketClient(port: stack.port)
        notJSON.send("hello")
        #expect(notJSON.closed()?.code == 1007)
        let noType = try EventSocketClient(port: stack.port)
        noType.send(#"{"token":"x"}"#)
        #expect(noType.closed()?.code == 1007)
        let binary = try EventSocketClient(port: stack.port)
        binary.sendFrame(.binary, Data([1, 2, 3]))
        #expect(binary.closed()?.code == 1003)
        let large = try EventSocketClient(port: stack.port)
        large.send(#"{"type":"auth","token":""# + String(repeating: "x", count: 100_000) + #""}"#)
        #expect(large.closed()?.code == 1009)

        // Signed in: an unknown message type is answered, and the socket stays; another user's token closes it.
        let socket = try EventSocketClient(port: stack.port)
        socket.authenticate(ann.accessToken)
        #expect(socket.next()?["type"] == "ready")
        socket.send(#"{"type":"subscribe"}"#)
        let error = socket.next()
        #expect(error?["type"] == "error" && error?["code"] == "bad_request", "\(String(describing: error))")
        socket.authenticate(bea.accessToken)
        let closed = socket.closed()
        #expect(closed?.code == 4401 && closed?.reason.contains("one user") == true, "\(String(describing: closed))")

        // The one that sent nothing: closed at 10 s.
        let silentClose = silent.closed(within: 15)
        #expect(silentClose?.code == 4401, "\(String(describing: silentClose))")
        #expect(Date().timeIntervalSince(started) > 9)
        #expect(try stack.client.get("/health/live").status == 200)
    }

    @Test("frames as RFC 6455 has them: a message in fragments with a ping between, pongs, a client's close answered; unmasked frames, bad UTF-8 and stray continuations closed with their codes")
    func frames() throws {
        let stack = try EdgeStack("frames")
        let ann = try stack.anonymous()

        let socket = try EventSocketClient(port: stack.port)
        let auth = Data(String(decoding: JSONWriter.data(.object(["type": .string("auth"), "token": .string(ann.accessToken)])),
                               as: UTF8.self).utf8)
        socket.sendFrame(.text, auth.prefix(10), fin: false)
        socket.sendFrame(.ping, Data("are you there".utf8))
        socket.sendFrame(.continuation, auth.dropFirst(10).prefix(20), fin: false)
        socket.sendFrame(.continuation, auth.dropFirst(30))
        #expect(socket.next()?["type"] == "ready")
        #expect(socket.pongs == 1)
        socket.close()
        #expect(socket.closed()?.code == 1000)

        let unmasked = try EventSocketClient(port: stack.port)
        unmasked.sendFrame(.text, auth, masked: false)
        let refused = unmasked.closed()
        #expect(refused?.code == 1002 && refused?.reason.contains("masked") == true, "\(String(describing: refused))")
        let badUTF8 = try EventSocketClient(port: stack.port)
        badUTF8.sendFrame(.text, Data([0x7B, 0xC3, 0x28, 0x7D]))
        #expect(badUTF8.closed()?.code == 1007)
        let stray = try EventSocketClient(port: stack.port)
        stray.sendFrame(.continuation, Data("{}".utf8))
        #expect(stray.closed()?.code == 1002)
        let fragmentsTooLarge = try EventSocketClient(port: stack.port)
        for _ in 0..<3 { fragmentsTooLarge.sendFrame(.text, Data(repeating: 0x20, count: 30_000), fin: false) }
        #expect(fragmentsTooLarge.closed()?.code == 1002)
        let growing = try EventSocketClient(port: stack.port)
        growing.sendFrame(.text, Data(repeating: 0x20, count: 30_000), fin: false)
        for _ in 0..<2 { growing.sendFrame(.continuation, Data(repeating: 0x20, count: 30_000), fin: false) }
        #expect(growing.closed()?.code == 1009)
        #expect(try stack.client.get("/health/live").status == 200)
    }

    @Test("the server pings every 30 s: a socket that answers stays open, one that answers nothing for a minute is closed with 1001")
    func pings() throws {
        let stack = try EdgeStack("pings")
        let ann = try stack.register("ann@example.org")
        let silent = try EventSocketClient(port: stack.port, answersPings: false)
        silent.authenticate(ann.accessToken)
        let answering = try EventSocketClient(port: stack.port)
        answering.authenticate(ann.accessToken)
        #expect(silent.next()?["type"] == "ready")
        #expect(answering.next()?["type"] == "ready")
        // Its token was the last it sent: closed a little after 60 s.
        let closed = silent.closed(within: 75)
        #expect(closed?.code == 1001 && closed?.reason == "no answer to pings", "\(String(describing: closed))")
        #expect(silent.pings >= 2)
        #expect(!answering.hasEnded)
        #expect(answering.pings >= 2)
    }

    @Test("a token expiring on an open socket closes it with 4401 unless a new one is sent before; a renewed socket keeps receiving")
    func expiry() throws {
        let stack = try EdgeStack("expiry")
        let ann = try stack.register("ann@example.org"), bea = try stack.register("bea@example.org")
        // Two of Bea's sockets, signed in with a token that expires in 4 s; one is renewed with her real token.
        let lapsing = try EventSocketClient(port: stack.port)
        lapsing.authenticate(try stack.tokenExpiring(in: 4, for: bea))
        let renewed = try EventSocketClient(port: stack.port)
        renewed.authenticate(try stack.tokenExpiring(in: 4, for: bea))
        #expect(lapsing.next()?["type"] == "ready")
        #expect(renewed.next()?["type"] == "ready")
        Thread.sleep(forTimeInterval: 1)
        renewed.authenticate(bea.accessToken)

        let closed = lapsing.closed(within: 8)
        #expect(closed?.code == 4401 && closed?.reason.contains("expired") == true, "\(String(describing: closed))")
        Thread.sleep(forTimeInterval: 1)
        #expect(!renewed.hasEnded)
        let sent = try stack.client.signed(ann.accessToken).post("/v1/messages", ["to": .string(bea.user.id), "text": "still there?"])
        #expect(sent.status == 201)
        #expect(renewed.next(ofType: "chat.message")?["message"]?["text"] == "still there?")
        // An expired token cannot open a socket either.
        let late = try EventSocketClient(port: stack.port)
        late.authenticate(try stack.tokenExpiring(in: -1, for: bea))
        #expect(late.closed()?.code == 4401)
        renewed.close()
    }

    @Test("at most 8 sockets per user and a configured total: past either the upgrade is refused with 429 (or, token sent later, closed with 4429)")
    func limits() throws {
        let stack = try EdgeStack("socket-limits", environment: ["HEREABOUTS_EDGE_MAX_SOCKETS": "12"])
        let ann = try stack.anonymous(), bea = try stack.anonymous()
        var sockets: [EventSocketClient] = []
        for _ in 0..<8 {
            let socket = try EventSocketClient(port: stack.port, headers: [("Authorization", "Bearer \(ann.accessToken)")])
            #expect(socket.next()?["type"] == "ready")
            sockets.append(socket)
        }
        // The ninth with the token on the upgrade: 429, as a problem, with Retry-After.
        let refused = try Self.upgrade(stack.port, token: ann.accessToken)
        #expect(refused.status == 429 && refused.problemCode == "rate_limited" && refused.header("Retry-After") != nil, "\(refused)")
        #expect(throws: (any Error).self) { _ = try EventSocketClient(port: stack.port, headers: [("Authorization", "Bearer \(ann.accessToken)")]) }
        // The ninth with the token as its first message: closed with 4429.
        let ninth = try EventSocketClient(port: stack.port)
        ninth.authenticate(ann.accessToken)
        #expect(ninth.closed()?.code == 4429)
        // A bad token on the upgrade: 401.
        let unauthenticated = try Self.upgrade(stack.port, token: "nope")
        #expect(unauthenticated.status == 401 && unauthenticated.header("WWW-Authenticate") == "Bearer", "\(unauthenticated)")

        // Another user may open theirs, up to the edge's total of 12.
        for _ in 0..<4 {
            let socket = try EventSocketClient(port: stack.port)
            socket.authenticate(bea.accessToken)
            #expect(socket.next()?["type"] == "ready")
            sockets.append(socket)
        }
        let full = try Self.upgrade(stack.port)
        #expect(full.status == 429 && full.text.contains("as many sockets"), "\(full)")
        // One closes; a place is free again.
        sockets.removeLast().close()
        Thread.sleep(forTimeInterval: 0.3)
        let again = try EventSocketClient(port: stack.port)
        again.authenticate(bea.accessToken)
        #expect(again.next()?["type"] == "ready")
        // A plain GET of the socket's route says how to use it.
        #expect(try stack.client.get("/v1/events").status == 426)
        for socket in sockets + [again] { socket.close() }
    }
}
