import Contracts
import Foundation
import ServiceKitTesting
import TestThreads
import Testing

@Suite("Malformed and hostile favourites requests", .ownThread)
struct HostileRequestTests {
    @Test("each gets the right error, and the service then answers a valid request")
    func table() throws {
        let fixture = try FavouritesFixture()
        let user = try fixture.upstream.user()
        func request(_ name: String, _ op: String, _ body: String, _ expected: String) -> Rejection {
            Rejection(name, op: "favourites.\(op)", body: body, token: user.token, expected: expected)
        }
        let cases = [
            Rejection("no token", op: "favourites.add", body: #"{"postId":"abc"}"#, expected: "unauthenticated"),
            request("no postId", "add", "{}", "invalid_argument postId"),
            request("postId a number", "add", #"{"postId":5}"#, "invalid_argument postId"),
            request("postId with a slash", "remove", #"{"postId":"a/b"}"#, "invalid_argument postId"),
            request("postId of 41 characters", "add", "{\"postId\":\"\(String(repeating: "a", count: 41))\"}", "invalid_argument postId"),
            request("limit 0", "list", #"{"limit":0}"#, "invalid_argument limit"),
            request("limit 101", "list", #"{"limit":101}"#, "invalid_argument limit"),
            request("a forged cursor", "list", #"{"cursor":"Zm9v"}"#, "invalid_argument cursor"),
            request("a cursor not base64", "list", #"{"cursor":"!!"}"#, "invalid_argument cursor"),
            request("contains not a list", "contains", #"{"postIds":"a"}"#, "invalid_argument postIds"),
            request("contains 201 ids", "contains", "{\"postIds\":[\((0...200).map { "\"p\($0)\"" }.joined(separator: ","))]}",
                    "invalid_argument postIds"),
            request("contains a bad id", "contains", #"{"postIds":["ok","no way"]}"#, "invalid_argument postIds[1]"),
            request("a body that is a list", "add", "[1]", "bad_request"),
            request("an unknown op", "share", "{}", "unknown_op"),
            request("health with a list for a body", "health", "[]", "bad_request"),
            request("readiness with a null body", "ready", "null", "bad_request"),
            request("a backup named as a path", "backup", #"{"name":"../../etc"}"#, "invalid_argument name"),
        ]
        try fixture.upstream.stack.expectRejections(by: fixture.favourites, named: "favourites", cases: cases) {
            try fixture.client.call(FavouritesAPI.list, FavouritesListRequest(), token: user.token).total == 0
        }
    }
}
