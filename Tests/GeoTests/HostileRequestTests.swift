import Contracts
import Foundation
import ServiceKitTesting
import TestThreads
import Testing
import Wire

@Suite("Malformed and hostile geo requests", .ownThread)
struct HostileRequestTests {
    @Test("each gets the right error, and the service then answers a valid request")
    func table() throws {
        let geo = try GeoFixture()
        let owner = try geo.user()
        _ = try geo.create(PostDraft(kind: "restaurant", title: "Burger Bar", lat: 52.09, lon: 5.12), token: owner.token)
        try geo.catchUp()
        let at = #""lat":52.09,"lon":5.12"#
        let cases: [Rejection] = [
            Rejection("no centre", op: "geo.search", body: #"{"radius":100}"#, expected: "invalid_argument lat"),
            Rejection("lat without lon", op: "geo.search", body: #"{"lat":1,"radius":100}"#, expected: "invalid_argument lon"),
            Rejection("latitude 91", op: "geo.search", body: #"{"lat":91,"lon":0,"radius":100}"#, expected: "invalid_argument lat"),
            Rejection("longitude as text", op: "geo.search", body: #"{"lat":1,"lon":"east","radius":100}"#, expected: "invalid_argument lon"),
            Rejection("latitude overflowing", op: "geo.search", body: #"{"lat":1e400,"lon":0,"radius":100}"#, expected: "invalid_argument lat"),
            Rejection("no radius", op: "geo.search", body: "{\(at)}", expected: "invalid_argument radius"),
            Rejection("radius 0", op: "geo.search", body: "{\(at),\"radius\":0}", expected: "invalid_argument radius"),
            Rejection("radius 501 km", op: "geo.search", body: "{\(at),\"radius\":500001}", expected: "invalid_argument radius"),
            Rejection("q of 201 characters", op: "geo.search", body: "{\(at),\"radius\":100,\"q\":\"\(String(repeating: "a", count: 201))\"}", expected: "invalid_argument q"),
            Rejection("q a number", op: "geo.search", body: "{\(at),\"radius\":100,\"q\":7}", expected: "invalid_argument q"),
            Rejection("kinds not a list", op: "geo.search", body: "{\(at),\"radius\":100,\"kinds\":\"sight\"}", expected: "invalid_argument kinds"),
            Rejection("a kind in capitals", op: "geo.search", body: "{\(at),\"radius\":100,\"kinds\":[\"SIGHT\"]}", expected: "invalid_argument kinds[0]"),
            Rejection("a tag that is a number", op: "geo.search", body: "{\(at),\"radius\":100,\"tags\":[1]}", expected: "invalid_argument tags[0]"),
            Rejection("openNow as text", op: "geo.search", body: "{\(at),\"radius\":100,\"openNow\":\"yes\"}", expected: "invalid_argument openNow"),
            Rejection("at not an instant", op: "geo.search", body: "{\(at),\"radius\":100,\"at\":\"tomorrow\"}", expected: "invalid_argument at"),
            Rejection("an unknown sort", op: "geo.search", body: "{\(at),\"radius\":100,\"sort\":\"price\"}", expected: "invalid_argument sort"),
            Rejection("limit 101", op: "geo.search", body: "{\(at),\"radius\":100,\"limit\":101}", expected: "invalid_argument limit"),
            Rejection("a forged cursor", op: "geo.search", body: "{\(at),\"radius\":100,\"cursor\":\"WyJ4IiwibjAiLCInOyBkcm9wIl0\"}", expected: "invalid_argument cursor"),
            Rejection("a cursor of another sort", op: "geo.search", body: "{\(at),\"radius\":100,\"sort\":\"title\",\"cursor\":\"WyJkaXN0YW5jZSIsIm4wIiwiYSJd\"}", expected: "invalid_argument cursor"),
            Rejection("k 0", op: "geo.nearest", body: "{\(at),\"k\":0}", expected: "invalid_argument k"),
            Rejection("k 101", op: "geo.nearest", body: "{\(at),\"k\":101}", expected: "invalid_argument k"),
            Rejection("no k", op: "geo.nearest", body: "{\(at)}", expected: "invalid_argument k"),
            Rejection("maxDistance negative", op: "geo.nearest", body: "{\(at),\"k\":3,\"maxDistance\":-5}", expected: "invalid_argument maxDistance"),
            Rejection("a box upside down", op: "geo.within", body: #"{"minLat":10,"minLon":0,"maxLat":5,"maxLon":1}"#, expected: "invalid_argument maxLat"),
            Rejection("a box past the pole", op: "geo.within", body: #"{"minLat":10,"minLon":0,"maxLat":95,"maxLon":1}"#, expected: "invalid_argument maxLat"),
            Rejection("within limit 1001", op: "geo.within", body: #"{"minLat":0,"minLon":0,"maxLat":1,"maxLon":1,"limit":1001}"#, expected: "invalid_argument limit"),
            Rejection("users near without a token", op: "geo.users.near", body: "{\(at),\"radius\":100}", expected: "unauthenticated"),
            Rejection("a place and a point", op: "geo.search", body: "{\(at),\"place\":\"Utrecht\",\"radius\":100}", expected: "invalid_argument place"),
            Rejection("a place of punctuation", op: "geo.search", body: #"{"place":"!?","radius":100}"#, expected: "invalid_argument place"),
            Rejection("a place nowhere", op: "geo.search", body: #"{"place":"Qxqzzv","radius":100}"#, expected: "not_found place"),
            Rejection("places without q", op: "geo.places.search", body: "{}", expected: "invalid_argument q"),
            Rejection("places q empty", op: "geo.places.search", body: #"{"q":""}"#, expected: "invalid_argument q"),
            Rejection("places q only quotes", op: "geo.places.search", body: #"{"q":"\"*'"}"#, expected: "invalid_argument q"),
            Rejection("places q of 201 characters", op: "geo.places.search", body: "{\"q\":\"\(String(repeating: "a", count: 201))\"}", expected: "invalid_argument q"),
            Rejection("places country not ISO", op: "geo.places.search", body: #"{"q":"Paris","countryCode":"F1"}"#, expected: "invalid_argument countryCode"),
            Rejection("places limit 0", op: "geo.places.search", body: #"{"q":"Paris","limit":0}"#, expected: "invalid_argument limit"),
            Rejection("reverse without lon", op: "geo.places.reverse", body: #"{"lat":1}"#, expected: "invalid_argument lon"),
            Rejection("reverse latitude -91", op: "geo.places.reverse", body: #"{"lat":-91,"lon":0}"#, expected: "invalid_argument lat"),
            Rejection("a country code of three letters", op: "geo.countries.get", body: #"{"code":"NLD"}"#, expected: "invalid_argument code"),
            Rejection("a country code that is no country", op: "geo.countries.get", body: #"{"code":"ZZ"}"#, expected: "invalid_argument code"),
            Rejection("a fence update without a token", op: "geo.fences.update", body: "{\(at)}", expected: "unauthenticated"),
            Rejection("a fence plan without lon", op: "geo.fences.plan", body: #"{"lat":1}"#, expected: "invalid_argument lon"),
            Rejection("a fence plan of 21", op: "geo.fences.plan", body: "{\(at),\"max\":21}", expected: "invalid_argument max"),
            Rejection("a fence plan of 0", op: "geo.fences.plan", body: "{\(at),\"max\":0}", expected: "invalid_argument max"),
            Rejection("a watch without a token", op: "geo.watch.open", body: "{\"search\":{\(at),\"radius\":100}}", expected: "unauthenticated"),
            Rejection("a renew without a token", op: "geo.watch.renew", body: #"{"id":"w1"}"#, expected: "unauthenticated"),
            Rejection("a close without a token", op: "geo.watch.close", body: #"{"id":"w1"}"#, expected: "unauthenticated"),
            Rejection("a body that is a list", op: "geo.search", body: "[1]", expected: "bad_request"),
            Rejection("an unknown op", op: "geo.teleport", body: "{}", expected: "unknown_op"),
            Rejection("health with a list for a body", op: "geo.health", body: "[]", expected: "bad_request"),
            Rejection("readiness with a null body", op: "geo.ready", body: "null", expected: "bad_request"),
            Rejection("a backup named as a path", op: "geo.backup", body: #"{"name":"/tmp/x"}"#, expected: "invalid_argument name"),
            Rejection("stats with a string for a body", op: "geo.stats", body: #""all""#, expected: "bad_request"),
        ]
        try geo.stack.expectRejections(by: geo.geo, named: "geo", cases: cases) {
            try geo.client.call(GeoAPI.search, SearchRequest(lat: 52.09, lon: 5.12, radius: 1_000)).hits.count == 1
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
