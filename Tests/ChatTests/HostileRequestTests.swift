import Contracts
import Foundation
import ServiceKitTesting
import TestThreads
import Testing

@Suite("Malformed and hostile chat requests", .ownThread)
struct HostileRequestTests {
    @Test("each gets the right error, and the service then answers a valid request")
    func table() throws {
        let fixture = try ChatFixture()
        let users = try fixture.users(2)
        let ann = users[0], bob = users[1]
        let conversation = try fixture.send("hi", from: ann, to: bob.id).conversationId
        func request(_ name: String, _ op: String, _ body: String, _ expected: String) -> Rejection {
            Rejection(name, op: "chat.\(op)", body: body, token: ann.token, expected: expected)
        }
        let cases = [
            Rejection("no token", op: "chat.send", body: "{\"to\":\"\(bob.id)\",\"text\":\"x\"}", expected: "unauthenticated"),
            request("neither to nor conversation", "send", #"{"text":"x"}"#, "invalid_argument to"),
            request("both to and conversation", "send", "{\"to\":\"\(bob.id)\",\"conversationId\":\"\(conversation)\",\"text\":\"x\"}",
                    "invalid_argument conversationId"),
            request("empty text", "send", "{\"to\":\"\(bob.id)\",\"text\":\"\"}", "invalid_argument text"),
            request("text of 4,001", "send", "{\"to\":\"\(bob.id)\",\"text\":\"\(String(repeating: "a", count: 4_001))\"}",
                    "invalid_argument text"),
            request("text a number", "send", "{\"to\":\"\(bob.id)\",\"text\":4}", "invalid_argument text"),
            request("to not an id", "send", #"{"to":"a b","text":"x"}"#, "invalid_argument to"),
            request("messages without conversation", "messages", "{}", "invalid_argument conversationId"),
            request("before and after", "messages", "{\"conversationId\":\"\(conversation)\",\"before\":3,\"after\":1}", "invalid_argument after"),
            request("before negative", "messages", "{\"conversationId\":\"\(conversation)\",\"before\":-1}", "invalid_argument before"),
            request("limit 101", "messages", "{\"conversationId\":\"\(conversation)\",\"limit\":101}", "invalid_argument limit"),
            request("read without seq", "read", "{\"conversationId\":\"\(conversation)\"}", "invalid_argument seq"),
            request("read seq as text", "read", "{\"conversationId\":\"\(conversation)\",\"seq\":\"2\"}", "invalid_argument seq"),
            request("a forged cursor", "conversations", #"{"cursor":"eDEy"}"#, "invalid_argument cursor"),
            request("block without userId", "block", "{}", "invalid_argument userId"),
            request("a body that is a list", "send", "[1]", "bad_request"),
            request("an unknown op", "poke", "{}", "unknown_op"),
            request("unblock without userId", "unblock", "{}", "invalid_argument userId"),
            request("health with a list for a body", "health", "[]", "bad_request"),
            request("readiness with a null body", "ready", "null", "bad_request"),
            request("a backup named as a path", "backup", #"{"name":"../../etc"}"#, "invalid_argument name"),
            request("a device of no platform", "devices.register", #"{"platform":"fax","token":"00"}"#, "invalid_argument platform"),
            request("an APNs token not in hex", "devices.register",
                    #"{"platform":"apns","token":"\#(String(repeating: "zz", count: 32))","topic":"a.b"}"#, "invalid_argument token"),
            request("a subscription whose key is no P-256 point", "devices.register",
                    #"{"platform":"webpush","subscription":{"endpoint":"https://10.0.0.1/x","keys":{"p256dh":"\#(String(repeating: "B", count: 87))","auth":"AAAAAAAAAAAAAAAAAAAAAA"}}}"#,
                    "invalid_argument subscription.keys"),
            request("a list for devices", "devices", "[]", "bad_request"),
            request("delete without deviceId", "devices.delete", "{}", "invalid_argument deviceId"),
            request("mute as text", "mute", "{\"conversationId\":\"\(conversation)\",\"muted\":\"yes\"}", "invalid_argument muted"),
            request("the VAPID key with a list for a body", "push.vapidKey", "[]", "bad_request"),
        ]
        try fixture.upstream.stack.expectRejections(by: fixture.chat, named: "chat", cases: cases) {
            try fixture.conversations(ann).conversations.count == 1
        }
    }
}
