import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import ServiceKitTesting
import TestThreads
import Testing
import Wire
@testable import Edge

/// How the edge turns HTTP into ops and replies back, piece by piece (the system
/// tests drive the same through real processes).
@Suite("HTTP to ops and back", .ownThread)
struct TranslationTests {
    @Test("a service's error becomes the problem and status of EDGE.md's table")
    func problems() throws {
        let table: [(ServiceError, Int, String)] = [
            (.badRequest("x"), 400, "bad_request"), (.invalidArgument(field: "radius", "x"), 422, "invalid_argument"),
            (.unauthenticated("x"), 401, "unauthenticated"), (.permissionDenied("x"), 403, "permission_denied"),
            (.notFound("x"), 404, "not_found"), (ServiceError(code: .unknownOp, message: "x"), 404, "not_found"),
            (.conflict("x"), 409, "conflict"), (.tooLarge("x"), 413, "too_large"),
            (.rateLimited("x", retryAfterMs: 1500), 429, "rate_limited"), (.unavailable("x"), 503, "unavailable"),
            (.internal, 500, "internal"),
        ]
        for (error, status, code) in table {
            let problem = Problem(error)
            #expect(problem.status.code == status && problem.code == code, "\(error)")
            let response = problem.response
            #expect(response.headers[.contentType] == "application/problem+json")
            #expect((response.headers[.retryAfter] != nil) == [429, 503].contains(status), "\(error)")
            #expect((response.headers[.wwwAuthenticate] == "Bearer") == (status == 401), "\(error)")
        }
        #expect(Problem(.rateLimited("x", retryAfterMs: 1500)).response.headers[.retryAfter] == "2")
        let body = try JSONParser.parse(Problem(.invalidArgument(field: "radius", "radius must be 1–500000 metres")).body)
        #expect(body == .object(["title": .string("Invalid argument"), "status": .number(.integer(422)),
                                 "code": .string("invalid_argument"), "detail": .string("radius must be 1–500000 metres"),
                                 "field": .string("radius")]))
        #expect(Problem(.tooLarge("x")).response.headers[.connection] == "close")
    }

    @Test("X-Forwarded-For is believed from trusted proxies only, walking back past them")
    func clientAddress() {
        let headers: HTTPFields = [.init("X-Forwarded-For")!: "203.0.113.9, 10.0.0.2"]
        #expect(ClientMiddleware.client(of: headers, peer: "198.51.100.1", trusting: ["10.0.0.1"]) == "198.51.100.1")
        #expect(ClientMiddleware.client(of: headers, peer: "10.0.0.1", trusting: ["10.0.0.1"]) == "10.0.0.2")
        #expect(ClientMiddleware.client(of: headers, peer: "10.0.0.1", trusting: ["10.0.0.1", "10.0.0.2"]) == "203.0.113.9")
        #expect(ClientMiddleware.client(of: [:], peer: "10.0.0.1", trusting: ["10.0.0.1"]) == "10.0.0.1")
    }

    @Test("query parameters become the op's fields with their JSON types; a malformed one names itself")
    func queryParameters() throws {
        let body = try QueryParameter.body(QueryShape.parameters(of: SearchRequest.self),
                                           from: URI("/v1/search?lat=52.09&lon=5&radius=2000&kinds=offer,sight&openNow=true&q=bike%20shop"))
        #expect(body == ["lat": .number(.double(52.09)), "lon": .number(.integer(5)), "radius": .number(.integer(2000)),
                         "q": .string("bike shop"), "kinds": .array([.string("offer"), .string("sight")]), "openNow": .bool(true)])
        for (query, field) in [("lat=north", "lat"), ("limit=2.5", "limit"), ("openNow=perhaps", "openNow"), ("radius=1e999", "radius")] {
            #expect(throws: Problem.self) { try QueryParameter.body(QueryShape.parameters(of: SearchRequest.self), from: URI("/v1/search?\(query)")) }
            do {
                _ = try QueryParameter.body(QueryShape.parameters(of: SearchRequest.self), from: URI("/v1/search?\(query)"))
            } catch let problem as Problem {
                #expect(problem.status.code == 422 && problem.field == field, "\(query)")
            }
        }
    }

    @Test("query text decodes as Foundation's removingPercentEncoding did (text not UTF-8 kept as written), on 20,000 random texts")
    func decodingAsFoundation() {
        var random = SeededRandom(state: 35)
        let pieces = ["%", "+", "a", "Z", "0", "9", "%2", "%2B", "%41", "%zz", "%C3", "%A9", "%c3%a9", "%F0%9F%8D%94", "%FF",
                      "%00", "é", "🍔", " ", "=", "%%", "%e2%82", "%E2%82%AC"]
        for _ in 0..<20_000 {
            let text = (0..<Int.random(in: 0...8, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined()
            let spaced = text.replacingOccurrences(of: "+", with: " ")
            // Foundation gives nil for some bytes that are not UTF-8 (%FF) and repairs
            // others into U+FFFD (a lone %A9): either way the text stays as written.
            let foundation = spaced.removingPercentEncoding.flatMap { $0.contains("\u{FFFD}") ? nil : $0 }
            #expect(FormQuery.decoded(Substring(text)) == (foundation ?? spaced), "\(text)")
        }
    }

    @Test("a made X-Request-Id is a version 4 UUID in lower case, a new one each time")
    func requestIDs() throws {
        let ids = (0..<1_000).map { _ in ClientMiddleware.newRequestID() }
        #expect(Set(ids).count == ids.count)
        for id in ids.prefix(50) {
            let uuid = try #require(UUID(uuidString: id), "\(id)")
            #expect(uuid.uuidString.lowercased() == id)
            #expect(Array(id)[14] == "4" && "89ab".contains(Array(id)[19]), "\(id)")
        }
    }

    @Test("a form-encoded query reads as browsers write it: + is a space, escapes decode in names and values, a repeated field is refused")
    func formEncodedQueries() throws {
        // What URLSearchParams writes for {"certification": "AOWD"} and for "burger king".
        let query = FormQuery(URI("/v1/users/near?attributes=%7B%22certification%22%3A+%22AOWD%22%7D&q=burger+king&a%2Bb=1+%2B+1&empty"))
        #expect(query["attributes"] == #"{"certification": "AOWD"}"#)
        #expect(query["q"] == "burger king" && query["a+b"] == "1 + 1" && query["empty"] == "")
        #expect(FormQuery("limit=%FF")["limit"] == "%FF", "an escape that is not UTF-8 is kept as written")
        #expect(FormQuery("place=M%C3%BCnster&q=caf%c3%a9")["place"] == "Münster" && FormQuery("q=caf%c3%a9")["q"] == "café")
        #expect(FormQuery("q=100%+sure")["q"] == "100% sure", "a malformed escape leaves the value as written")
        let body = try QueryParameter.body(QueryShape.parameters(of: SearchRequest.self), from: URI("/v1/search?q=burger+king&place=Den+Haag&radius=1e3"))
        #expect(body == ["q": .string("burger king"), "place": .string("Den Haag"), "radius": .number(.integer(1000))])
        do {
            _ = try QueryParameter.body(QueryShape.parameters(of: SearchRequest.self), from: URI("/v1/search?lat=52&lat=53&lon=5"))
            Issue.record("a repeated lat was taken")
        } catch let problem as Problem {
            #expect(problem.status.code == 422 && problem.field == "lat")
        }
    }

    @Test("a page's Link header keeps the query and replaces the cursor, all in ASCII")
    func nextLink() {
        #expect(EdgeRoutes.nextLink(URI("/v1/search?place=Utrecht&radius=500&cursor=old"), cursor: "a+b/c")
            == #"</v1/search?place=Utrecht&radius=500&cursor=a%2Bb%2Fc>; rel="next""#)
        #expect(EdgeRoutes.nextLink(URI("/v1/search?q=k%C3%B6ln+dom"), cursor: "c")
            == #"</v1/search?q=k%C3%B6ln%20dom&cursor=c>; rel="next""#)
    }

    @Test("hits become a GeoJSON FeatureCollection of points at [lon, lat]")
    func geoJSON() throws {
        let reply: JSONObject = ["hits": .array([.object(["id": .string("p1"), "lat": .number(.double(52.1)),
                                                          "lon": .number(.double(5.1)), "title": .string("Bike")])]),
                                 "nextCursor": .string("c")]
        let collection = try JSONParser.parse(GeoJSON.featureCollection(reply))
        #expect(collection == .object([
            "type": .string("FeatureCollection"),
            "features": .array([.object(["type": .string("Feature"), "id": .string("p1"),
                                         "geometry": .object(["type": .string("Point"),
                                                              "coordinates": .array([.number(.double(5.1)), .number(.double(52.1))])]),
                                         "properties": .object(["id": .string("p1"), "lat": .number(.double(52.1)),
                                                                "lon": .number(.double(5.1)), "title": .string("Bike")])])]),
            "nextCursor": .string("c"),
        ]))
        #expect(GeoJSON.isAccepted("application/json;q=0.5, application/geo+json"))
        #expect(!GeoJSON.isAccepted("application/json"))
        // What a generated client sends by default: every type, so JSON.
        #expect(!GeoJSON.isAccepted("application/geo+json, application/json, application/problem+json"))
        #expect(!GeoJSON.isAccepted("application/json, application/geo+json"))
        #expect(GeoJSON.isAccepted("application/geo+json, */*;q=0.8"))
        #expect(GeoJSON.isAccepted("*/*, application/geo+json"))
        #expect(!GeoJSON.isAccepted("application/geo+json;q=0, */*"))
        #expect(!GeoJSON.isAccepted("application/geo+json;q=0.5, application/json"))
    }
}
