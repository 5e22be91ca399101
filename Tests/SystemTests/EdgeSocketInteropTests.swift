import Contracts
import EdgeFixtures
import Foundation
import HummingbirdWSClient
import Logging
import Synchronization
import TestThreads
import Testing
import Wire

/// The events WebSocket through a client library the edge did not write:
/// swift-websocket's `WebSocketClient` (what HereaboutsKit uses on Linux) signs in,
/// hears a chat message, and closes normally. The edge's socket handling is its own
/// (NIO channel handlers), so this is the check that it speaks RFC 6455 as others do.
@Suite("The events WebSocket with swift-websocket's client", .ownThread)
struct EdgeSocketInteropTests {
    @Test("a standard client signs in, receives a chat message sent over HTTP, and closes with 1000")
    func standardClient() async throws {
        let stack = try EdgeStack("interop")
        let ann = try stack.register("ann@example.org", displayName: "Ann")
        let bea = try stack.register("bea@example.org", displayName: "Bea")
        let beaClient = stack.client.signed(bea.accessToken)
        let auth = String(decoding: JSONWriter.data(.object(["type": .string("auth"), "token": .string(ann.accessToken)])), as: UTF8.self)

        let heard = Mutex<[JSONObject]>([])
        let closing = try await WebSocketClient.connect(url: "ws://127.0.0.1:\(stack.port)/v1/events", logger: Logger(label: "interop")) {
            inbound, outbound, _ in
            try await outbound.write(.text(auth))
            for try await message in inbound.messages(maxSize: 1 << 16) {
                guard case .text(let text) = message, let object = try JSONParser.parse(Data(text.utf8)).objectValue else { continue }
                heard.withLock { $0.append(object) }
                if object["type"]?.stringValue == "ready" {
                    let sent = try beaClient.post("/v1/messages", ["to": .string(ann.user.id), "text": "Dive on Sunday?"])
                    #expect(sent.status == 201, "\(sent)")
                }
                if object["type"]?.stringValue == "chat.message" { return }
            }
        }
        let messages = heard.withLock { $0 }
        #expect(messages.first?["type"]?.stringValue == "ready")
        #expect(messages.last?["message"]?["text"]?.stringValue == "Dive on Sunday?")
        #expect(closing?.closeCode == .normalClosure, "\(String(describing: closing))")
    }
}
