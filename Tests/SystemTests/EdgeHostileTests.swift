import Contracts
import EdgeFixtures
import Foundation
import ServiceKitTesting
import TestThreads
import Testing
import Wire

/// What a hostile or broken client sends the edge: each gets a clean error or a
/// close, never a hang or a crash, and the edge serves everyone else throughout.
@Suite("Hostile HTTP at the edge", .serialized, .ownThread)
struct EdgeHostileTests {
    /// Sends `bytes` on a fresh connection and reads what comes back until the edge closes it (10 s at most).
    static func exchange(_ port: Int, _ bytes: Data) throws -> (text: String, closed: Bool) {
        let connection = try RawConnection(port: port, timeout: 10)
        connection.send(bytes)
        var received = Data()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline, let more = connection.receiveSome() { received.append(more) }
        return (String(decoding: received, as: UTF8.self), Date() < deadline)
    }

    static func statusLine(_ text: String) -> String { String(text.prefix { $0 != "\r" }) }

    @Test("malformed request lines and headers, bad chunked encoding, smuggling: 400, huge headers: 431, and a close, at once")
    func malformedRequests() throws {
        let stack = try EdgeStack("hostile")
        let edgePid = try #require(CrashTests.child(named: "edge-service", of: stack.up.process.processIdentifier))
        let cases: [(String, Data, [String])] = [
            ("a request line that is not HTTP", Data("GARBAGE\r\n\r\n".utf8), ["400"]),
            ("an unknown version", Data("GET /health/live HTTP/7.3\r\nHost: x\r\n\r\n".utf8), ["400"]),
            ("a header without a colon", Data("GET /health/live HTTP/1.1\r\nHost x\r\n\r\n".utf8), ["400"]),
            ("a NUL in a header", Data("GET /health/live HTTP/1.1\r\nHost: x\r\nX-A: a\u{0}b\r\n\r\n".utf8), ["400"]),
            ("a bare LF in a header value", Data("GET /health/live HTTP/1.1\r\nHost: x\r\nX-A: a\nb\r\n\r\n".utf8), ["400"]),
            ("headers over 16 KiB", Data(("GET /health/live HTTP/1.1\r\nHost: x\r\nX-Pad: " + String(repeating: "p", count: 20_000) + "\r\n\r\n").utf8),
             ["431"]),
            ("Content-Length with Transfer-Encoding", Data("POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n".utf8),
             ["400"]),
            ("two Content-Lengths", Data("POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}".utf8), ["400"]),
            ("a chunk size that is not hex", Data("POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\n{}\r\n0\r\n\r\n".utf8),
             ["400"]),
            ("a chunk longer than it says", Data("POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{\"a\":1}\r\n0\r\n\r\n".utf8),
             ["400"]),
        ]
        for (name, bytes, statuses) in cases {
            let (text, closed) = try Self.exchange(stack.port, bytes)
            let status = Self.statusLine(text)
            #expect(statuses.contains { status.hasPrefix("HTTP/1.1 \($0)") }, "\(name): \(text.prefix(300))")
            #expect(closed, "\(name): the edge kept the connection open")
            // Everyone else is served.
            #expect(try stack.client.get("/health/live").status == 200, "after \(name)")
        }
        // A connection that sends nothing, and one that sends half a request line, are closed (header deadline).
        let silent = try RawConnection(port: stack.port)
        let half = try RawConnection(port: stack.port)
        half.send("GET /health/li")
        #expect(silent.closesWithin(15) && half.closesWithin(5))
        // The same edge process throughout.
        #expect(CrashTests.child(named: "edge-service", of: stack.up.process.processIdentifier) == edgePid)
        #expect(!stack.edgeLog.contains("Fatal error"), "\(stack.edgeLog)")
    }

    @Test("bodies that are not what they say: wrong content types, invalid UTF-8, deep JSON, not an object, wrong types, images that are not")
    func badBodies() throws {
        let stack = try EdgeStack("bodies")
        let client = stack.client.signed(try stack.anonymous().accessToken)
        func post(_ path: String, _ body: Data, type: String? = "application/json") throws -> HTTPReply {
            try client.send("POST", path, body: body, contentType: type)
        }
        let deep = Data((String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)).utf8)
        let cases: [(String, HTTPReply, Int, String)] = [
            ("form data", try post("/v1/auth/login", Data("a=b".utf8), type: "application/x-www-form-urlencoded"), 415, "bad_request"),
            ("text", try post("/v1/auth/login", Data("{}".utf8), type: "text/plain"), 415, "bad_request"),
            ("invalid UTF-8", try post("/v1/auth/login", Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x3A, 0x31, 0x7D]), type: "application/json"), 400,
             "bad_request"),
            ("deep JSON", try post("/v1/auth/login", Data("{\"login\":".utf8) + deep + Data("}".utf8)), 400, "bad_request"),
            ("an array", try post("/v1/auth/login", deep), 400, "bad_request"),
            // A field of the wrong type is the service's invalid_argument, naming the field.
            ("a string where a number goes", try post("/v1/fences/update", Data(#"{"lat":"52","lon":5}"#.utf8)), 422, "invalid_argument"),
            ("a number out of range", try post("/v1/fences/update", Data(#"{"lat":1e999,"lon":5}"#.utf8)), 422, "invalid_argument"),
            ("an image that is HTML", try client.send("PUT", "/v1/me/avatar", body: TestImages.html, contentType: "image/png"), 422,
             "invalid_argument"),
            ("an image without a type", try client.send("PUT", "/v1/me/avatar", body: TestImages.png(width: 2, height: 2), contentType: nil), 415,
             "bad_request"),
            ("a decompression bomb", try client.send("PUT", "/v1/me/avatar", body: TestImages.decompressionBomb, contentType: "image/png"), 413,
             "too_large"),
        ]
        for (name, reply, status, code) in cases {
            #expect(reply.status == status && reply.problemCode == code, "\(name): \(reply)")
            #expect(reply.header("Content-Type") == "application/problem+json", "\(name)")
        }
        #expect(try stack.client.get("/health/live").status == 200)
    }

    @Test("a 33-byte PNG declaring 2^32-1 × 2^32-1 pixels, with no token or with one, is refused and stops no process")
    func overflowingImage() throws {
        let stack = try EdgeStack("overflow")
        let parent = stack.up.process.processIdentifier
        let processes = ["edge-service", "auth-service", "catalogue-service"]
        let before = processes.map { CrashTests.child(named: $0, of: parent) }
        #expect(!before.contains(nil), "\(before)")
        let image = TestImages.overflowingPNG
        // The edge reads the image's header before any token is checked.
        for path in ["/v1/me/avatar", "/v1/posts/p_unknown/images"] {
            let reply = try stack.client.send(path.hasSuffix("avatar") ? "PUT" : "POST", path, body: image, contentType: "image/png")
            #expect(reply.status == 401 && reply.problemCode == "unauthenticated", "\(path): \(reply)")
        }
        // With a token the services read it too, and refuse it for its pixels.
        let session = try stack.register("overflow@example.com")
        let client = stack.client.signed(session.accessToken)
        let avatar = try client.send("PUT", "/v1/me/avatar", body: image, contentType: "image/png")
        #expect(avatar.status == 413 && avatar.problemCode == "too_large", "\(avatar)")
        let post = try client.post("/v1/posts", ["kind": "offer", "title": "Bike", "lat": 52.09, "lon": 5.12, "timezone": "Europe/Amsterdam"])
        let postId = try #require(post.object()["post"]?["id"]?.stringValue, "\(post)")
        let added = try client.send("POST", "/v1/posts/\(postId)/images", body: image, contentType: "image/png")
        #expect(added.status == 413 && added.problemCode == "too_large", "\(added)")
        #expect(try client.get("/v1/me").status == 200)
        #expect(processes.map { CrashTests.child(named: $0, of: parent) } == before)
        #expect(!stack.logs.tails(["edge", "auth", "catalogue"]).contains("Fatal error"))
    }

    @Test("unknown routes and methods, odd paths and queries: 404 and 405 problems")
    func oddRoutes() throws {
        let stack = try EdgeStack("routes")
        // (`/` is the console's page since issue 24.)
        for path in ["/index.php", "/v1", "/v2/search", "/v1/" + String(repeating: "a", count: 4_000), "/.env", "/v1/users/me/avatar/x"] {
            let reply = try stack.client.get(path)
            #expect(reply.status == 404 && reply.header("Content-Type") == "application/problem+json", "\(path.prefix(80)): \(reply)")
        }
        // Ids that are no ids are the service's to refuse.
        for path in ["/v1/posts/%00", "/v1/posts/..%2F..%2Fetc%2Fpasswd", "/v1/posts/" + String(repeating: "x", count: 300)] {
            let reply = try stack.client.get(path)
            #expect(try reply.status == 422 && reply.object()["field"] == "id", "\(path.prefix(80)): \(reply)")
        }
        let delete = try stack.client.delete("/v1/search")
        #expect(delete.status == 405 && delete.header("Allow") == "GET")
        let trace = try stack.client.send("TRACE", "/v1/search")
        #expect(trace.status == 405 && trace.header("Allow") == "GET", "\(trace)")
        // Each hostile query is the protocol's invalid_argument, naming the field it is about.
        let queries: [(String, String)] = [
            ("lat=52&lon=5&radius=100&limit=%FF", "limit"),
            ("lat=52&lon=5&radius=100&kinds=" + String(repeating: "k,", count: 5_000), "kinds"),
            ("lat=52&lon=5&radius=100&q=" + String(repeating: "x", count: 10_000), "q"),
            ("place=%00&radius=100", "place"),
            ("lat=52&lat=53&lon=5&radius=100", "lat"),
            ("lat=NaN&lon=5&radius=100", "lat"),
            ("lat=52&lon=5&radius=100&at=yesterday", "at"),
        ]
        for (query, field) in queries {
            let reply = try stack.client.get("/v1/search?\(query)")
            #expect(try reply.status == 422 && reply.problemCode == "invalid_argument" && reply.object()["field"]?.stringValue == field,
                    "\(query.prefix(80)): \(reply)")
        }
        #expect(try stack.client.get("/health/live").status == 200)
    }
}
