import EdgeFixtures
import Foundation
import Testing
import Wire

/// The routes the edge answers on its event loops (search, nearest, within, a post),
/// beside the ones Hummingbird answers, on the same connections.
@Suite("The edge's passed routes", .serialized)
struct EdgePassingTests {
    @Test("requests sent together on one connection are answered in the order sent, passed or not, each with its id, CORS and the rate limit as on any route")
    func orderAndMiddleware() throws {
        let origin = "https://app.example"
        let stack = try EdgeStack("passing", environment: ["HEREABOUTS_EDGE_RATE_LIMIT": "1/14", "HEREABOUTS_EDGE_CORS_ORIGINS": origin])
        let connection = try RawConnection(port: stack.port)
        // One write: a passed search first (a call to geo), then Hummingbird's health
        // (no call at all), which must still come second.
        let requests: [(String, String, [String])] = [
            ("GET", "/v1/search?lat=52.09&lon=5.12&radius=1000", []),
            ("GET", "/health/live", []),
            ("GET", "/v1/posts/doesnotexist", []),
            ("GET", "/v1/nearest?lat=52.09&lon=5.12&k=1", ["Origin: \(origin)"]),
            ("POST", "/v1/search", ["Content-Length: 0"]),
            ("GET", "/v1/within?minLat=north", ["Connection: close"]),
        ]
        var text = ""
        for (index, (method, path, fields)) in requests.enumerated() {
            text += "\(method) \(path) HTTP/1.1\r\nHost: x\r\nX-Request-Id: p\(index + 1)\r\n"
                + fields.map { "\($0)\r\n" }.joined() + "\r\n"
        }
        #expect(connection.send(text))
        let replies = try requests.map { try connection.receiveResponse(to: $0.0) }
        #expect(replies.map(\.status) == [200, 200, 404, 200, 405, 422], "\(replies)")
        #expect(replies.map { $0.header("X-Request-Id") } == (1...6).map { "p\($0)" }, "\(replies)")
        #expect(replies[0].text.contains("\"hits\"") && replies[1].text.contains("\"ok\""), "\(replies)")
        #expect(replies[2].problemCode == "not_found" && replies[5].problemCode == "invalid_argument", "\(replies)")
        #expect(replies[3].header("Access-Control-Allow-Origin") == origin && replies[3].header("Vary") == "Origin", "\(replies[3])")
        #expect(replies[0].header("Access-Control-Allow-Origin") == nil)
        #expect(replies[4].header("Allow") == "GET")
        #expect(replies.allSatisfy { $0.header("Server") == "hereabouts-edge" && $0.header("Date")?.hasSuffix(" GMT") == true })
        #expect(replies[5].header("Connection") == "close" && connection.closesWithin(4))

        // A passed route's preflight is Hummingbird's: answered for a listed origin only.
        let preflight = try stack.client.send("OPTIONS", "/v1/search", headers: [("Origin", origin), ("Access-Control-Request-Method", "GET")])
        #expect(preflight.status == 204 && preflight.header("Access-Control-Allow-Origin") == origin, "\(preflight)")
        #expect(preflight.header("Access-Control-Allow-Methods")?.contains("GET") == true && preflight.header("Vary") == "Origin")
        let stranger = try stack.client.get("/v1/search?lat=52.09&lon=5.12&radius=1000", headers: [("Origin", "https://elsewhere.example")])
        #expect(stranger.status == 200 && stranger.header("Access-Control-Allow-Origin") == nil, "\(stranger)")

        // The burst of 14 is spent but for 6: past it 429, with when to try again.
        var limited: HTTPReply?
        for _ in 0..<20 where limited == nil {
            let reply = try stack.client.get("/v1/search?lat=52.09&lon=5.12&radius=1000")
            if reply.status == 429 { limited = reply }
        }
        #expect(limited?.problemCode == "rate_limited" && limited?.header("Retry-After").flatMap(Int.init) == 1, "\(String(describing: limited))")
    }
}
