import Contracts
import Foundation
import TestThreads
import Testing
import Wire

@Suite("Malformed and hostile geo requests", .ownThread)
struct GeoHostileTests {
    private func request(_ op: String, _ body: String) -> Data {
        Data(#"{"v":1,"id":"hostile-1","op":"geo.\#(op)","body":\#(body)}"#.utf8)
    }

    @Test("each gets the right error, and the service then answers a valid request")
    func table() throws {
        let geo = try GeoFixture()
        let owner = try geo.user()
        _ = try geo.create(PostDraft(kind: "restaurant", title: "Burger Bar", lat: 52.09, lon: 5.12), token: owner.token)
        try geo.catchUp()
        let at = #""lat":52.09,"lon":5.12"#
        let cases: [(String, String, String, String)] = [
            ("no centre", "search", #"{"radius":100}"#, "invalid_argument lat"),
            ("lat without lon", "search", #"{"lat":1,"radius":100}"#, "invalid_argument lon"),
            ("latitude 91", "search", #"{"lat":91,"lon":0,"radius":100}"#, "invalid_argument lat"),
            ("longitude as text", "search", #"{"lat":1,"lon":"east","radius":100}"#, "invalid_argument lon"),
            ("latitude overflowing", "search", #"{"lat":1e400,"lon":0,"radius":100}"#, "invalid_argument lat"),
            ("no radius", "search", "{\(at)}", "invalid_argument radius"),
            ("radius 0", "search", "{\(at),\"radius\":0}", "invalid_argument radius"),
            ("radius 501 km", "search", "{\(at),\"radius\":500001}", "invalid_argument radius"),
            ("q of 201 characters", "search", "{\(at),\"radius\":100,\"q\":\"\(String(repeating: "a", count: 201))\"}", "invalid_argument q"),
            ("q a number", "search", "{\(at),\"radius\":100,\"q\":7}", "invalid_argument q"),
            ("kinds not a list", "search", "{\(at),\"radius\":100,\"kinds\":\"sight\"}", "invalid_argument kinds"),
            ("a kind in capitals", "search", "{\(at),\"radius\":100,\"kinds\":[\"SIGHT\"]}", "invalid_argument kinds[0]"),
            ("a tag that is a number", "search", "{\(at),\"radius\":100,\"tags\":[1]}", "invalid_argument tags[0]"),
            ("openNow as text", "search", "{\(at),\"radius\":100,\"openNow\":\"yes\"}", "invalid_argument openNow"),
            ("at not an instant", "search", "{\(at),\"radius\":100,\"at\":\"tomorrow\"}", "invalid_argument at"),
            ("an unknown sort", "search", "{\(at),\"radius\":100,\"sort\":\"price\"}", "invalid_argument sort"),
            ("limit 101", "search", "{\(at),\"radius\":100,\"limit\":101}", "invalid_argument limit"),
            ("a forged cursor", "search", "{\(at),\"radius\":100,\"cursor\":\"WyJ4IiwibjAiLCInOyBkcm9wIl0\"}", "invalid_argument cursor"),
            ("a cursor of another sort", "search", "{\(at),\"radius\":100,\"sort\":\"title\",\"cursor\":\"WyJkaXN0YW5jZSIsIm4wIiwiYSJd\"}", "invalid_argument cursor"),
            ("k 0", "nearest", "{\(at),\"k\":0}", "invalid_argument k"),
            ("k 101", "nearest", "{\(at),\"k\":101}", "invalid_argument k"),
            ("no k", "nearest", "{\(at)}", "invalid_argument k"),
            ("maxDistance negative", "nearest", "{\(at),\"k\":3,\"maxDistance\":-5}", "invalid_argument maxDistance"),
            ("a box upside down", "within", #"{"minLat":10,"minLon":0,"maxLat":5,"maxLon":1}"#, "invalid_argument maxLat"),
            ("a box past the pole", "within", #"{"minLat":10,"minLon":0,"maxLat":95,"maxLon":1}"#, "invalid_argument maxLat"),
            ("within limit 1001", "within", #"{"minLat":0,"minLon":0,"maxLat":1,"maxLon":1,"limit":1001}"#, "invalid_argument limit"),
            ("users near without a token", "users.near", "{\(at),\"radius\":100}", "unauthenticated"),
            ("a place and a point", "search", "{\(at),\"place\":\"Utrecht\",\"radius\":100}", "invalid_argument place"),
            ("a place of punctuation", "search", #"{"place":"!?","radius":100}"#, "invalid_argument place"),
            ("a place nowhere", "search", #"{"place":"Qxqzzv","radius":100}"#, "not_found place"),
            ("places without q", "places.search", "{}", "invalid_argument q"),
            ("places q empty", "places.search", #"{"q":""}"#, "invalid_argument q"),
            ("places q only quotes", "places.search", #"{"q":"\"*'"}"#, "invalid_argument q"),
            ("places q of 201 characters", "places.search", "{\"q\":\"\(String(repeating: "a", count: 201))\"}", "invalid_argument q"),
            ("places country not ISO", "places.search", #"{"q":"Paris","countryCode":"F1"}"#, "invalid_argument countryCode"),
            ("places limit 0", "places.search", #"{"q":"Paris","limit":0}"#, "invalid_argument limit"),
            ("reverse without lon", "places.reverse", #"{"lat":1}"#, "invalid_argument lon"),
            ("reverse latitude -91", "places.reverse", #"{"lat":-91,"lon":0}"#, "invalid_argument lat"),
            ("a country code of three letters", "countries.get", #"{"code":"NLD"}"#, "invalid_argument code"),
            ("a country code that is no country", "countries.get", #"{"code":"ZZ"}"#, "invalid_argument code"),
            ("a fence update without a token", "fences.update", "{\(at)}", "unauthenticated"),
            ("a fence plan without lon", "fences.plan", #"{"lat":1}"#, "invalid_argument lon"),
            ("a fence plan of 21", "fences.plan", "{\(at),\"max\":21}", "invalid_argument max"),
            ("a fence plan of 0", "fences.plan", "{\(at),\"max\":0}", "invalid_argument max"),
            ("a watch without a token", "watch.open", "{\"search\":{\(at),\"radius\":100}}", "unauthenticated"),
            ("a renew without a token", "watch.renew", #"{"id":"w1"}"#, "unauthenticated"),
            ("a close without a token", "watch.close", #"{"id":"w1"}"#, "unauthenticated"),
            ("a body that is a list", "search", "[1]", "bad_request"),
            ("an unknown op", "teleport", "{}", "unknown_op"),
            ("health with a list for a body", "health", "[]", "bad_request"),
            ("readiness with a null body", "ready", "null", "bad_request"),
            ("a backup named as a path", "backup", #"{"name":"/tmp/x"}"#, "invalid_argument name"),
            ("stats with a string for a body", "stats", #""all""#, "bad_request"),
        ]
        // Every op the service answers meets at least one of them.
        let covered = Set(cases.map { request($0.1, $0.2) }.compactMap { (try? JSONParser.parse($0))?.objectValue?["op"]?.stringValue })
        let uncovered = Set(geo.geo.ops).subtracting(covered)
        #expect(uncovered.isEmpty, "no hostile case for \(uncovered.sorted())")
        for (name, op, body, expected) in cases {
            let reply = try geo.stack.exchangeRaw("geo", frames: [request(op, body)])
            let frame0 = try #require(reply?.first, "no reply to \(name)")
            switch ReplyEnvelope.decode(frame0).result {
            case .success: Issue.record("\(name) was accepted")
            case .failure(let error): #expect(error.summary == expected, "\(name): \(error)")
            }
        }
        // Query strings are words, never syntax: each is searched as the words in it
        // ("Burger Bar" holds burger and bar; no words at all matches everything).
        let queries: [(String, Int)] = [
            (#""burger" OR NEAR("#, 0), ("*", 1), ("'; drop table post; --", 0), ("\\u0000", 0), ("%", 1),
            ("burger*", 1), ("🍔 burger", 1), ("BAR", 1), (String(repeating: "(", count: 200), 1),
        ]
        for (q, expected) in queries {
            let reply = try geo.client.call(GeoAPI.search, SearchRequest(lat: 52.09, lon: 5.12, radius: 1_000, q: q))
            #expect(reply.hits.count == expected, "q \(q)")
        }
        #expect(try geo.client.call(GeoAPI.search, SearchRequest(lat: 52.09, lon: 5.12, radius: 1_000, q: "burger")).hits.count == 1)
    }
}
