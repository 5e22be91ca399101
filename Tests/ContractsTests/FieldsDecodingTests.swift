import Contracts
import Foundation
import Testing
import Wire

@Suite("Bodies read member by member")
struct FieldsDecodingTests {
    /// Values a client might send for any member: right and wrong types, nulls,
    /// out-of-range numbers, bad enum strings and times.
    static let candidates: [JSONValue] = [
        .null, .bool(true), .number(.integer(20)), .number(.integer(-3)), .number(.double(52.09)),
        .number(.double(2.5)), .number(.double(1e300)), .number(.integer(Int64.max)), .string("bakery"),
        .string("distance"), .string("-title"), .string("nearest"), .string("2026-11-22T10:00:00Z"),
        .string("yesterday"), .string(""), .array([]), .array([.string("restaurant"), .string("sight")]),
        .array([.string("vegan"), .number(.integer(3))]), .object(JSONObject()),
    ]
    /// Each member with values of its own type, mostly sent.
    static let members: [String: [JSONValue]] = [
        "lat": [.number(.double(52.09)), .number(.integer(-89))], "lon": [.number(.double(5.12)), .number(.integer(180))],
        "place": [.string("Utrecht")], "radius": [.number(.integer(5000)), .number(.double(2.5))], "q": [.string("bakery")],
        "kinds": [.array([.string("sight")]), .array([])], "tags": [.array([.string("vegan")])], "openNow": [.bool(false)],
        "at": [.string("2026-11-22T10:00:00Z")], "sort": [.string("-title"), .string("newest")],
        "limit": [.number(.integer(20)), .number(.double(3.0))], "cursor": [.string("abc")], "extra": [.null],
    ]

    @Test("geo.search bodies: the hand-written reading gives what Decodable gives, value or first error")
    func searchRequestAgrees() throws {
        var generator = SystemRandomNumberGenerator()
        var bodies: [JSONObject] = [
            JSONObject(),
            JSONObject([("lat", .number(.double(52.09))), ("lon", .number(.double(5.12))), ("radius", .number(.integer(5000)))]),
        ]
        for _ in 0..<5_000 {
            var body = JSONObject()
            // Members in a random order, each present with probability ~1/2.
            for (member, fitting) in Self.members.shuffled(using: &generator) where Bool.random(using: &generator) {
                let anything = Int.random(in: 0..<12, using: &generator) == 0
                body[member] = (anything ? Self.candidates : fitting).randomElement(using: &generator)!
            }
            bodies.append(body)
        }
        var values = 0, errors = 0
        for body in bodies {
            let viaDecodable = Result { try JSONValueDecoder().decode(SearchRequest.self, from: .object(body)) }
            let viaFields = Result { try SearchRequest(fields: JSONFields(body)) }
            let viaEnvelope = Result { try RequestEnvelope(id: "r", op: GeoAPI.search.name, body: body).decodeBody(SearchRequest.self) }
            switch (viaDecodable, viaFields) {
            case (.success(let expected), .success(let read)):
                values += 1
                #expect(read == expected, "\(body)")
            case (.failure(let expected as ServiceError), .failure(let read as ServiceError)):
                errors += 1
                #expect(read == expected, "\(body)")
            default:
                Issue.record("\(body): Decodable gave \(viaDecodable), the fields \(viaFields)")
            }
            #expect(String(describing: viaEnvelope) == String(describing: viaFields))
        }
        // Both outcomes were exercised many times.
        #expect(values > 100 && errors > 100)
    }
}
