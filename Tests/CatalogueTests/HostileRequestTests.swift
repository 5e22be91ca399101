import Contracts
import Crypto
import Foundation
import ServiceKitTesting
import TestThreads
import Testing
import Wire

@Suite("Malformed and hostile catalogue requests", .ownThread)
struct HostileRequestTests {
    private func request(_ op: String, _ body: String, token: String? = nil) -> Data {
        Rejection.envelope(op: "catalogue.\(op)", body: body, token: token)
    }

    @Test("each gets the right error, and the service then answers a valid request")
    func table() throws {
        let catalogue = try CatalogueFixture()
        let user = try catalogue.user()
        let token = user.token
        let post = try catalogue.create(.sample(), token: token)
        let stranger = Curve25519.Signing.PrivateKey()
        let header = Base64URL.encode(Data(#"{"alg":"EdDSA","typ":"JWT","kid":"x"}"#.utf8))
        let claims = Base64URL.encode(Data(#"{"sub":"\#(user.id)","sid":"s","anon":false,"iat":1,"exp":9999999999}"#.utf8))
        let forged = "\(header).\(claims).\(Base64URL.encode(try stranger.signature(for: Data("\(header).\(claims)".utf8))))"
        let valid = #"{"kind":"sight","title":"T","lat":1,"lon":2"#

        let cases: [Rejection] = [
            Rejection("body not an object", frames: [request("posts.create", "[1]", token: token)], expected: "bad_request"),
            Rejection("missing title", frames: [request("posts.create", #"{"kind":"sight","lat":1,"lon":2}"#, token: token)], expected: "invalid_argument title"),
            Rejection("latitude as text", frames: [request("posts.create", #"{"kind":"sight","title":"T","lat":"north","lon":2}"#, token: token)], expected: "invalid_argument lat"),
            Rejection("latitude overflowing", frames: [request("posts.create", #"{"kind":"sight","title":"T","lat":1e400,"lon":2}"#, token: token)], expected: "invalid_argument lat"),
            Rejection("tags not a list", frames: [request("posts.create", valid + #","tags":"a,b"}"#, token: token)], expected: "invalid_argument tags"),
            Rejection("a tag that is a number", frames: [request("posts.create", valid + #","tags":[7]}"#, token: token)], expected: "invalid_argument tags[0]"),
            Rejection("price not an object", frames: [request("posts.create", valid + #","price":12}"#, token: token)], expected: "invalid_argument price"),
            Rejection("amount as text", frames: [request("posts.create", valid + #","price":{"amount":"12","currency":"EUR"}}"#, token: token)], expected: "invalid_argument price.amount"),
            Rejection("place without a country", frames: [request("posts.create", valid + #","place":{"city":"Oslo"}}"#, token: token)], expected: "invalid_argument place.countryCode"),
            Rejection("kind in capitals", frames: [request("posts.create", #"{"kind":"SIGHT","title":"T","lat":1,"lon":2}"#, token: token)], expected: "invalid_argument kind"),
            Rejection("SQL in hours", frames: [request("posts.create", valid + #","hours":"Mo 09:00-17:00; DROP TABLE post","timezone":"UTC"}"#, token: token)], expected: "invalid_argument hours"),
            Rejection("a 300 KiB create", frames: [request("posts.create", valid + #","text":"\#(String(repeating: "x", count: 300 * 1024))"}"#, token: token)], expected: "too_large"),
            Rejection("a 1.2 MiB import", frames: [request("posts.import", #"{"posts":[{"pad":"\#(String(repeating: "x", count: 1_250_000))"}]}"#, token: token)], expected: "too_large"),
            Rejection("posts not a list", frames: [request("posts.import", #"{"posts":{}}"#, token: token)], expected: "invalid_argument posts"),
            Rejection("a post that is not an object", frames: [request("posts.import", #"{"posts":[\#(valid + #","ref":"a"}"#),"oops"]}"#, token: token)], expected: "invalid_argument posts[1]"),
            Rejection("a fractional ifVersion", frames: [request("posts.update", #"{"id":"\#(post.id)","ifVersion":1.5}"#, token: token)], expected: "invalid_argument ifVersion"),
            Rejection("SQL as an id", frames: [request("posts.update", #"{"id":"1' OR '1'='1","title":"x"}"#, token: token)], expected: "invalid_argument id"),
            Rejection("an id of 41 characters", frames: [request("posts.get", #"{"id":"\#(String(repeating: "a", count: 41))"}"#)], expected: "invalid_argument id"),
            Rejection("ids not a list", frames: [request("posts.getMany", #"{"ids":"a"}"#)], expected: "invalid_argument ids"),
            Rejection("limit 0", frames: [request("posts.list", #"{"limit":0}"#)], expected: "invalid_argument limit"),
            Rejection("limit as text", frames: [request("posts.list", #"{"limit":"ten"}"#)], expected: "invalid_argument limit"),
            Rejection("a forged cursor", frames: [request("posts.list", #"{"cursor":"cDk5OSBPUiAxPTE"}"#)], expected: "invalid_argument cursor"),
            Rejection("SQL as an owner", frames: [request("posts.list", #"{"owner":"x' OR 1=1 --"}"#)], expected: "invalid_argument owner"),
            Rejection("two images at once", frames: [request("images.add", #"{"postId":"\#(post.id)"}"#, token: token), Data([1]), Data([2])], expected: "bad_request"),
            Rejection("an image without its frame", frames: [request("images.add", #"{"postId":"\#(post.id)"}"#, token: token)], expected: "invalid_argument image"),
            Rejection("half a star", frames: [request("ratings.set", #"{"postId":"\#(post.id)","stars":4.5}"#, token: token)], expected: "invalid_argument stars"),
            Rejection("30 February", frames: [request("trips.create", #"{"title":"T","city":"Rome","countryCode":"IT","start":"2027-02-30"}"#, token: token)], expected: "invalid_argument start"),
            Rejection("SQL as a country", frames: [request("trips.create", #"{"title":"T","city":"Rome","countryCode":"'; DROP TABLE trip;--"}"#, token: token)], expected: "invalid_argument countryCode"),
            Rejection("a cursor as text", frames: [request("changes", #"{"after":"x"}"#)], expected: "invalid_argument after"),
            Rejection("a token signed by another key", frames: [request("posts.create", valid + "}", token: forged)], expected: "unauthenticated"),
            Rejection("an unknown op", frames: [request("posts.teleport", "{}")], expected: "unknown_op"),
            Rejection("health with a list for a body", frames: [request("health", "[]")], expected: "bad_request"),
            Rejection("readiness with a null body", frames: [request("ready", "null")], expected: "bad_request"),
            Rejection("a backup named as a path", frames: [request("backup", #"{"name":"../../etc"}"#)], expected: "invalid_argument name"),
            Rejection("a delete without a token", frames: [request("posts.delete", #"{"id":"\#(post.id)"}"#)], expected: "unauthenticated"),
            Rejection("SQL as an image id", frames: [request("images.delete", #"{"id":"x' OR 1=1"}"#, token: token)], expected: "invalid_argument id"),
            Rejection("an image id of 41 characters", frames: [request("images.get", #"{"id":"\#(String(repeating: "b", count: 41))"}"#)], expected: "invalid_argument id"),
            Rejection("a trip id that is a number", frames: [request("trips.delete", #"{"id":7}"#, token: token)], expected: "invalid_argument id"),
            Rejection("a trip read without a token", frames: [request("trips.get", #"{"id":"t1"}"#)], expected: "unauthenticated"),
            Rejection("an invite without a user", frames: [request("trips.invite", #"{"id":"t1"}"#, token: token)], expected: "invalid_argument userId"),
            Rejection("an accept of an id that is a list", frames: [request("trips.accept", #"{"id":["t1"]}"#, token: token)], expected: "invalid_argument id"),
            Rejection("SQL as a trip to leave", frames: [request("trips.leave", #"{"id":"1; DROP TABLE trip"}"#, token: token)], expected: "invalid_argument id"),
            Rejection("trips listed with a list for a body", frames: [request("trips.list", "[]", token: token)], expected: "bad_request"),
        ]
        try catalogue.stack.expectRejections(by: catalogue.catalogue, named: "catalogue", cases: cases) {
            try catalogue.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post.id == post.id
        }
    }

    @Test("SQL text in a title is stored as text")
    func sqlTextIsData() throws {
        let catalogue = try CatalogueFixture()
        let user = try catalogue.user()
        let title = "Bobby'); DROP TABLE post;--"
        let post = try catalogue.create(.sample(title), token: user.token)
        #expect(try catalogue.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post.title == title)
        #expect(try catalogue.client.call(CatalogueAPI.list, ListPostsRequest()).total == 1)
    }
}
