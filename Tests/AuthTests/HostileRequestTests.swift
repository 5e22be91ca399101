import Contracts
import Crypto
import Foundation
import JWTKit
import ServiceKitTesting
import TestThreads
import Testing
import Wire

/// One hostile request and the error it must get (nil: no reply at all).
struct HostileCase: CustomTestStringConvertible, Sendable {
    let name: String
    let frames: @Sendable (_ auth: HostileContext) throws -> [Data]
    let expected: String?
    var delimiter = true

    var testDescription: String { name }

    func rejection(_ context: HostileContext) throws -> Rejection {
        Rejection(name, frames: try frames(context), expected: expected, delimiter: delimiter)
    }
}

/// What a hostile case may use to build its frames.
struct HostileContext {
    let userID: String
    let sessionID: String
    let forge: (_ issuedAt: Date) throws -> String
}

private func frame(_ text: String) -> Data { Data(text.utf8) }
private func request(_ op: String, body: String = "{}", token: String? = nil, id: String = "hostile-1") -> Data {
    Rejection.envelope(op: op, body: body, token: token, id: id)
}

private let tokenCases: [HostileCase] = [
    HostileCase(name: "an expired token", frames: { context in
        [request("auth.me", token: try context.forge(Date().addingTimeInterval(-3600)))]
    }, expected: "unauthenticated"),
    HostileCase(name: "a token issued in the future", frames: { context in
        [request("auth.me", token: try context.forge(Date().addingTimeInterval(3600)))]
    }, expected: "unauthenticated"),
    HostileCase(name: "a token signed by another key", frames: { context in
        let other = Curve25519.Signing.PrivateKey()
        let header = Base64URL.encode(Data(#"{"alg":"EdDSA","typ":"JWT","kid":"other"}"#.utf8))
        let exp = Int(Date().timeIntervalSince1970) + 600
        let payload = Base64URL.encode(Data(#"{"sub":"\#(context.userID)","sid":"\#(context.sessionID)","anon":false,"iat":\#(exp - 900),"exp":\#(exp)}"#.utf8))
        let signature = try other.signature(for: Data("\(header).\(payload)".utf8))
        return [request("auth.me", token: "\(header).\(payload).\(Base64URL.encode(signature))")]
    }, expected: "unauthenticated"),
    HostileCase(name: "a token with alg none", frames: { context in
        let header = Base64URL.encode(Data(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let exp = Int(Date().timeIntervalSince1970) + 600
        let payload = Base64URL.encode(Data(#"{"sub":"\#(context.userID)","sid":"\#(context.sessionID)","anon":false,"iat":\#(exp - 900),"exp":\#(exp)}"#.utf8))
        return [request("auth.me", token: "\(header).\(payload).")]
    }, expected: "unauthenticated"),
    HostileCase(name: "a real token with its payload swapped", frames: { context in
        let real = try context.forge(Date()).split(separator: ".")
        let payload = Base64URL.encode(Data(#"{"sub":"someone-else","sid":"x","anon":false,"iat":1,"exp":9999999999}"#.utf8))
        return [request("auth.me", token: "\(real[0]).\(payload).\(real[2])")]
    }, expected: "unauthenticated"),
    HostileCase(name: "a token that is not a JWT", frames: { _ in [request("auth.me", token: "garbage")] }, expected: "unauthenticated"),
    HostileCase(name: "a bad token on an op that needs none", frames: { _ in [request("auth.health", token: "x.y.z")] },
                expected: "unauthenticated"),
    HostileCase(name: "no token on an op that needs one", frames: { _ in [request("auth.me")] }, expected: "unauthenticated"),
]

private let envelopeCases: [HostileCase] = [
    HostileCase(name: "not JSON", frames: { _ in [frame("hello")] }, expected: "bad_request"),
    HostileCase(name: "a JSON array", frames: { _ in [frame("[1,2,3]")] }, expected: "bad_request"),
    HostileCase(name: "a JSON string", frames: { _ in [frame("\"auth.health\"")] }, expected: "bad_request"),
    HostileCase(name: "an empty frame", frames: { _ in [Data()] }, expected: "bad_request"),
    HostileCase(name: "no frames after the delimiter", frames: { _ in [] }, expected: "bad_request"),
    HostileCase(name: "wrong v", frames: { _ in [frame(#"{"v":2,"id":"a","op":"auth.health"}"#)] }, expected: "bad_request"),
    HostileCase(name: "missing v", frames: { _ in [frame(#"{"id":"a","op":"auth.health"}"#)] }, expected: "bad_request"),
    HostileCase(name: "a bad id", frames: { _ in [frame(#"{"v":1,"id":"has space","op":"auth.health"}"#)] }, expected: "bad_request"),
    HostileCase(name: "a non-ASCII id", frames: { _ in [frame(#"{"v":1,"id":"ïd","op":"auth.health"}"#)] }, expected: "bad_request"),
    HostileCase(name: "a missing id", frames: { _ in [frame(#"{"v":1,"op":"auth.health"}"#)] }, expected: "bad_request"),
    HostileCase(name: "an id of 65 characters", frames: { _ in
        [frame(#"{"v":1,"id":"\#(String(repeating: "x", count: 65))","op":"auth.health"}"#)]
    }, expected: "bad_request"),
    HostileCase(name: "an unknown op", frames: { _ in [request("auth.teleport")] }, expected: "unknown_op"),
    HostileCase(name: "another service's op", frames: { _ in [request("geo.search")] }, expected: "unknown_op"),
    HostileCase(name: "op not a string", frames: { _ in [frame(#"{"v":1,"id":"a","op":["auth.health"]}"#)] }, expected: "bad_request"),
    HostileCase(name: "token not a string", frames: { _ in [frame(#"{"v":1,"id":"a","op":"auth.health","token":42}"#)] }, expected: "bad_request"),
    HostileCase(name: "body not an object", frames: { _ in [request("auth.health", body: "[]")] }, expected: "bad_request"),
    HostileCase(name: "a raw newline inside frame 0", frames: { _ in [frame("{\"v\":1,\n\"id\":\"a\",\"op\":\"auth.health\"}")] },
                expected: "bad_request"),
    HostileCase(name: "a repeated key", frames: { _ in [frame(#"{"v":1,"id":"a","op":"auth.health","op":"auth.me"}"#)] },
                expected: "bad_request"),
    HostileCase(name: "a trailing comma", frames: { _ in [frame(#"{"v":1,"id":"a","op":"auth.health",}"#)] }, expected: "bad_request"),
    HostileCase(name: "invalid UTF-8", frames: { _ in [frame(#"{"v":1,"id":"a","op":"auth.health","body":{"x":""#) + Data([0xC3, 0x28]) + frame("\"}}")] },
                expected: "bad_request"),
    HostileCase(name: "10,000-deep nesting", frames: { _ in
        [frame(#"{"v":1,"id":"a","op":"auth.health","body":{"x":"# + String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000) + "}}")]
    }, expected: "bad_request"),
    HostileCase(name: "a 300 KiB frame 0", frames: { _ in
        [request("auth.health", body: #"{"pad":"\#(String(repeating: "a", count: 300 * 1024))"}"#)]
    }, expected: "too_large"),
    HostileCase(name: "a 9 MiB message in two frames", frames: { context in
        [request("auth.profile.update", token: try context.forge(Date())), Data(count: 4_700_000), Data(count: 4_700_000)]
    }, expected: "too_large"),
    HostileCase(name: "a 9 MiB frame, past ZMQ_MAXMSGSIZE", frames: { _ in [request("auth.health"), Data(count: 9 * 1024 * 1024)] },
                expected: nil),
    HostileCase(name: "a frame after frame 0 for an op that takes none", frames: { _ in [request("auth.health"), Data("x".utf8)] },
                expected: "bad_request"),
    HostileCase(name: "a DEALER that sends no delimiter", frames: { _ in [request("auth.health")] }, expected: "ok", delimiter: false),
]

private let bodyCases: [HostileCase] = [
    HostileCase(name: "a null body", frames: { _ in [request("auth.anonymous", body: "null")] }, expected: "bad_request"),
    HostileCase(name: "a body that is a list", frames: { _ in [request("auth.publicKey", body: "[]")] }, expected: "bad_request"),
    HostileCase(name: "a forged token on readiness", frames: { _ in [request("auth.ready", token: "a.b.c")] },
                expected: "unauthenticated"),
    HostileCase(name: "a backup named as a hidden file", frames: { _ in [request("auth.backup", body: #"{"name":".ssh"}"#)] },
                expected: "invalid_argument name"),
    HostileCase(name: "SQL as a user id", frames: { _ in [request("auth.avatar.get", body: #"{"userId":"1' OR '1'='1"}"#)] },
                expected: "invalid_argument userId"),
    HostileCase(name: "a password that is a number", frames: { context in
        [request("auth.delete", body: #"{"password":12345678}"#, token: try context.forge(Date()))]
    }, expected: "invalid_argument password"),
    HostileCase(name: "a logout without its token", frames: { _ in [request("auth.logout", body: "{}")] },
                expected: "invalid_argument refreshToken"),
    HostileCase(name: "a refresh token that is a number", frames: { _ in [request("auth.refresh", body: #"{"refreshToken":42}"#)] },
                expected: "invalid_argument refreshToken"),
    HostileCase(name: "a new password too short", frames: { context in
        [request("auth.password.change", body: #"{"oldPassword":"whatever1","newPassword":"short"}"#, token: try context.forge(Date()))]
    }, expected: "invalid_argument newPassword"),
    HostileCase(name: "an upgrade of a registered account", frames: { context in
        [request("auth.upgrade", body: #"{"email":"second@example.org","password":"password1"}"#, token: try context.forge(Date()))]
    }, expected: "permission_denied"),
    HostileCase(name: "a lookup of something not an email", frames: { context in
        [request("auth.users.lookup", body: #"{"email":"' OR 1=1 --"}"#, token: try context.forge(Date()))]
    }, expected: "invalid_argument email"),
    HostileCase(name: "a missing field", frames: { _ in [request("auth.register", body: #"{"email":"a@example.org"}"#)] },
                expected: "invalid_argument password"),
    HostileCase(name: "a mistyped field", frames: { _ in [request("auth.register", body: #"{"email":5,"password":"password1"}"#)] },
                expected: "invalid_argument email"),
    HostileCase(name: "a latitude out of range", frames: { context in
        [request("auth.location.set", body: #"{"lat":95.5,"lon":4}"#, token: try context.forge(Date()))]
    }, expected: "invalid_argument lat"),
    HostileCase(name: "a number too large for JSON doubles", frames: { context in
        [request("auth.location.set", body: #"{"lat":1e400,"lon":4}"#, token: try context.forge(Date()))]
    }, expected: "invalid_argument lat"),
    HostileCase(name: "a fractional limit", frames: { _ in [request("auth.changes", body: #"{"limit":2.5}"#)] },
                expected: "invalid_argument limit"),
    HostileCase(name: "a limit over 1,000", frames: { _ in [request("auth.changes", body: #"{"limit":1001}"#)] },
                expected: "invalid_argument limit"),
    HostileCase(name: "a negative cursor", frames: { _ in [request("auth.changes", body: #"{"after":-1}"#)] },
                expected: "invalid_argument after"),
    HostileCase(name: "an over-long display name", frames: { context in
        [request("auth.profile.update", body: #"{"displayName":"\#(String(repeating: "é", count: 101))"}"#, token: try context.forge(Date()))]
    }, expected: "invalid_argument displayName"),
    HostileCase(name: "a nested mistyped field", frames: { context in
        [request("auth.profile.update", body: #"{"contact":{"showEmail":"yes"}}"#, token: try context.forge(Date()))]
    }, expected: "invalid_argument contact.showEmail"),
    HostileCase(name: "an attribute that is an object", frames: { context in
        [request("auth.profile.update", body: #"{"attributes":{"gear":{"fins":true}}}"#, token: try context.forge(Date()))]
    }, expected: "invalid_argument attributes.gear"),
    HostileCase(name: "SQL text as a login", frames: { _ in [request("auth.login", body: #"{"login":"' OR 1=1 --","password":"x' OR '1'='1"}"#)] },
                expected: "unauthenticated"),
    HostileCase(name: "SQL text in a username", frames: { _ in
        [request("auth.register", body: #"{"email":"sql@example.org","password":"password1","username":"x'); DROP TABLE user;--"}"#)]
    }, expected: "invalid_argument username"),
    HostileCase(name: "SQL text in ids", frames: { _ in [request("auth.users.get", body: #"{"ids":["1 OR 1=1"]}"#)] },
                expected: "invalid_argument ids[0]"),
    HostileCase(name: "SQL text in session ids", frames: { _ in [request("auth.sessions.ended", body: #"{"sessionIds":["x' OR 1=1"]}"#)] },
                expected: "invalid_argument sessionIds[0]"),
    HostileCase(name: "a link token with a quote", frames: { _ in [request("auth.email.verify", body: #"{"token":"abcdefghijklmnop'--"}"#)] },
                expected: "invalid_argument token"),
    HostileCase(name: "a link token of 10,000 characters", frames: { _ in
        [request("auth.password.reset", body: #"{"token":"\#(String(repeating: "a", count: 10_000))","newPassword":"password1"}"#)]
    }, expected: "invalid_argument token"),
    HostileCase(name: "a well-formed token nobody made", frames: { _ in
        [request("auth.password.reset", body: #"{"token":"\#(String(repeating: "A", count: 32))","newPassword":"password1"}"#)]
    }, expected: "invalid_argument token"),
    HostileCase(name: "a forgotten password for a header injection", frames: { _ in
        [request("auth.password.forgot", body: #"{"email":"a@example.org\r\nBcc: all@example.org"}"#)]
    }, expected: "invalid_argument email"),
    HostileCase(name: "a resend whose body is a string", frames: { context in
        [request("auth.email.verify.resend", body: #""again""#, token: try context.forge(Date()))]
    }, expected: "bad_request"),
    HostileCase(name: "an operator's confirmation of an address no account has", frames: { _ in
        [request("auth.email.confirm", body: #"{"email":"nobody@example.org"}"#)]
    }, expected: "not_found"),
    HostileCase(name: "a mail preview of something not an address", frames: { _ in
        [request("auth.mail.latest", body: #"{"email":"../../etc/passwd"}"#)]
    }, expected: "invalid_argument email"),
    HostileCase(name: "a new address with angle brackets and no password", frames: { context in
        [request("auth.email.change", body: #"{"email":"<a>@example.org"}"#, token: try context.forge(Date()))]
    }, expected: "invalid_argument password"),
]

@Suite("Malformed and hostile auth requests", .ownThread)
struct HostileRequestTests {
    static let cases = envelopeCases + tokenCases + bodyCases

    @Test("every op auth answers meets at least one hostile request")
    func everyOpCovered() throws {
        let auth = try AuthFixture()
        let context = HostileContext(userID: "u1", sessionID: "s1") { _ in "x.y.z" }
        let rejections = try Self.cases.map { try $0.rejection(context) }
        let uncovered = Rejection.uncovered(auth.service.ops, by: rejections)
        #expect(uncovered.isEmpty, "no hostile case for \(uncovered)")
    }

    @Test("each gets the right error, and the service then answers a valid request", arguments: cases)
    func hostile(_ hostile: HostileCase) throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let sessionID = try auth.sessionID(of: session)
        let context = HostileContext(userID: session.user.id, sessionID: sessionID) { issuedAt in
            try auth.forgedToken(userID: session.user.id, sessionID: sessionID, issuedAt: issuedAt)
        }
        try auth.stack.expectRejection(try hostile.rejection(context), by: "auth")
        // The service is still there and still right.
        let me = try auth.client.call(AuthAPI.me, Empty(), token: session.accessToken)
        #expect(me.user.id == session.user.id)
    }

    @Test("SQL text in a display name is stored as text")
    func sqlTextIsData() throws {
        let auth = try AuthFixture()
        let name = "Robert'); DROP TABLE user;--"
        let session = try auth.register(displayName: name)
        #expect(try auth.client.call(AuthAPI.usersGet, UsersGetRequest(ids: [session.user.id])).users.first?.displayName == name)
        #expect(try auth.register().user.id != session.user.id)
    }

    @Test("a reply echoes the request id, and an empty id when none was readable")
    func echoesID() throws {
        let auth = try AuthFixture()
        #expect(try auth.raw(#"{"v":1,"id":"keep-me","op":"auth.nothing"}"#)?.id == "keep-me")
        #expect(try auth.raw(#"{"v":9,"id":"keep-me","op":"auth.health"}"#)?.id == "keep-me")
        #expect(try auth.raw("not json")?.id == "")
    }
}
