import Contracts
import Crypto
import Foundation
import TestThreads
import Testing
import Wire

@Suite("Malformed and hostile catalogue requests", .ownThread)
struct CatalogueHostileTests {
    private func request(_ op: String, _ body: String, token: String? = nil) -> Data {
        let tokenPart = token.map { ",\"token\":\"\($0)\"" } ?? ""
        return Data(#"{"v":1,"id":"hostile-1","op":"catalogue.\#(op)"\#(tokenPart),"body":\#(body)}"#.utf8)
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

        let cases: [(String, [Data], String)] = [
            ("body not an object", [request("posts.create", "[1]", token: token)], "bad_request"),
            ("missing title", [request("posts.create", #"{"kind":"sight","lat":1,"lon":2}"#, token: token)], "invalid_argument title"),
            ("latitude as text", [request("posts.create", #"{"kind":"sight","title":"T","lat":"north","lon":2}"#, token: token)], "invalid_argument lat"),
            ("latitude overflowing", [request("posts.create", #"{"kind":"sight","title":"T","lat":1e400,"lon":2}"#, token: token)], "invalid_argument lat"),
            ("tags not a list", [request("posts.create", valid + #","tags":"a,b"}"#, token: token)], "invalid_argument tags"),
            ("a tag that is a number", [request("posts.create", valid + #","tags":[7]}"#, token: token)], "invalid_argument tags[0]"),
            ("price not an object", [request("posts.create", valid + #","price":12}"#, token: token)], "invalid_argument price"),
            ("amount as text", [request("posts.create", valid + #","price":{"amount":"12","currency":"EUR"}}"#, token: token)], "invalid_argument price.amount"),
            ("place without a country", [request("posts.create", valid + #","place":{"city":"Oslo"}}"#, token: token)], "invalid_argument place.countryCode"),
            ("kind in capitals", [request("posts.create", #"{"kind":"SIGHT","title":"T","lat":1,"lon":2}"#, token: token)], "invalid_argument kind"),
            ("SQL in hours", [request("posts.create", valid + #","hours":"Mo 09:00-17:00; DROP TABLE post","timezone":"UTC"}"#, token: token)], "invalid_argument hours"),
            ("a 300 KiB create", [request("posts.create", valid + #","text":"\#(String(repeating: "x", count: 300 * 1024))"}"#, token: token)], "too_large"),
            ("a 1.2 MiB import", [request("posts.import", #"{"posts":[{"pad":"\#(String(repeating: "x", count: 1_250_000))"}]}"#, token: token)], "too_large"),
            ("posts not a list", [request("posts.import", #"{"posts":{}}"#, token: token)], "invalid_argument posts"),
            ("a post that is not an object", [request("posts.import", #"{"posts":[\#(valid + #","ref":"a"}"#),"oops"]}"#, token: token)], "invalid_argument posts[1]"),
            ("a fractional ifVersion", [request("posts.update", #"{"id":"\#(post.id)","ifVersion":1.5}"#, token: token)], "invalid_argument ifVersion"),
            ("SQL as an id", [request("posts.update", #"{"id":"1' OR '1'='1","title":"x"}"#, token: token)], "invalid_argument id"),
            ("an id of 41 characters", [request("posts.get", #"{"id":"\#(String(repeating: "a", count: 41))"}"#)], "invalid_argument id"),
            ("ids not a list", [request("posts.getMany", #"{"ids":"a"}"#)], "invalid_argument ids"),
            ("limit 0", [request("posts.list", #"{"limit":0}"#)], "invalid_argument limit"),
            ("limit as text", [request("posts.list", #"{"limit":"ten"}"#)], "invalid_argument limit"),
            ("a forged cursor", [request("posts.list", #"{"cursor":"cDk5OSBPUiAxPTE"}"#)], "invalid_argument cursor"),
            ("SQL as an owner", [request("posts.list", #"{"owner":"x' OR 1=1 --"}"#)], "invalid_argument owner"),
            ("two images at once", [request("images.add", #"{"postId":"\#(post.id)"}"#, token: token), Data([1]), Data([2])], "bad_request"),
            ("an image without its frame", [request("images.add", #"{"postId":"\#(post.id)"}"#, token: token)], "invalid_argument image"),
            ("half a star", [request("ratings.set", #"{"postId":"\#(post.id)","stars":4.5}"#, token: token)], "invalid_argument stars"),
            ("30 February", [request("trips.create", #"{"title":"T","city":"Rome","countryCode":"IT","start":"2027-02-30"}"#, token: token)], "invalid_argument start"),
            ("SQL as a country", [request("trips.create", #"{"title":"T","city":"Rome","countryCode":"'; DROP TABLE trip;--"}"#, token: token)], "invalid_argument countryCode"),
            ("a cursor as text", [request("changes", #"{"after":"x"}"#)], "invalid_argument after"),
            ("a token signed by another key", [request("posts.create", valid + "}", token: forged)], "unauthenticated"),
            ("an unknown op", [request("posts.teleport", "{}")], "unknown_op"),
            ("health with a list for a body", [request("health", "[]")], "bad_request"),
            ("readiness with a null body", [request("ready", "null")], "bad_request"),
            ("a backup named as a path", [request("backup", #"{"name":"../../etc"}"#)], "invalid_argument name"),
            ("a delete without a token", [request("posts.delete", #"{"id":"\#(post.id)"}"#)], "unauthenticated"),
            ("SQL as an image id", [request("images.delete", #"{"id":"x' OR 1=1"}"#, token: token)], "invalid_argument id"),
            ("an image id of 41 characters", [request("images.get", #"{"id":"\#(String(repeating: "b", count: 41))"}"#)], "invalid_argument id"),
            ("a trip id that is a number", [request("trips.delete", #"{"id":7}"#, token: token)], "invalid_argument id"),
            ("a trip read without a token", [request("trips.get", #"{"id":"t1"}"#)], "unauthenticated"),
            ("an invite without a user", [request("trips.invite", #"{"id":"t1"}"#, token: token)], "invalid_argument userId"),
            ("SQL as a trip to leave", [request("trips.leave", #"{"id":"1; DROP TABLE trip"}"#, token: token)], "invalid_argument id"),
            ("trips listed with a list for a body", [request("trips.list", "[]", token: token)], "bad_request"),
        ]
        // Every op the service answers meets at least one of them.
        let covered = Set(cases.flatMap(\.1).compactMap { (try? JSONParser.parse($0))?.objectValue?["op"]?.stringValue })
        let uncovered = Set(catalogue.catalogue.ops).subtracting(covered)
        #expect(uncovered.isEmpty, "no hostile case for \(uncovered.sorted())")
        for (name, frames, expected) in cases {
            let reply = try catalogue.stack.exchangeRaw("catalogue", frames: frames)
            let frame0 = try #require(reply?.first, "no reply to \(name)")
            switch ReplyEnvelope.decode(frame0).result {
            case .success: Issue.record("\(name) was accepted")
            case .failure(let error): #expect(error.summary == expected, "\(name): \(error)")
            }
            #expect(try catalogue.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post.id == post.id, "after \(name)")
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
