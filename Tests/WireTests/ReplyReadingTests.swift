import Foundation
import Testing
@testable import Wire

/// What a client takes from a reply's frame 0 without decoding it: the id it echoes
/// (to find the request it answers) and a success's body as the bytes the service
/// wrote (the edge passes them on). Replies laid out another way are parsed instead.
@Suite("Reading replies without decoding them")
struct ReplyReadingTests {
    /// Spaced as no encoder here writes it: a body parsed and written again would differ.
    private static let post = #"{"post": {"id": "p1", "tags": ["a", "}"], "version": 3}}"#

    @Test("a success as the services write it: its id, and its body byte for byte")
    func writtenSuccess() {
        let frame = ReplyEnvelope.success(id: "r-1_A", rawBody: Array(Self.post.utf8))
        #expect(ReplyEnvelope.requestID(of: frame) == "r-1_A")
        #expect(ReplyEnvelope.successBody(of: frame) == Data(Self.post.utf8))
        // A slice of a larger buffer, as a frame can be: its indices do not start at 0.
        let inBuffer = (Data("xx".utf8) + frame)[2...]
        #expect(ReplyEnvelope.requestID(of: inBuffer) == "r-1_A")
        #expect(ReplyEnvelope.successBody(of: inBuffer) == Data(Self.post.utf8))
    }

    @Test("a failure: its id, and no body")
    func writtenFailure() {
        let frame = ReplyEnvelope.failure(id: "r-2", error: ServiceError(code: .notFound, message: "no such post"))
        #expect(ReplyEnvelope.requestID(of: frame) == "r-2")
        #expect(ReplyEnvelope.successBody(of: frame) == nil)
    }

    @Test("replies laid out otherwise are parsed", arguments: [
        (#"{"id":"x","v":1,"ok":true,"body":{"a":1}}"#, "x", #"{"a":1}"#),
        (#"{"v":1, "id":"y", "ok":true, "body":{"a":1}}"#, "y", #"{"a":1}"#),
        (#"{"v":1,"id":"q\"uote","ok":true,"body":{}}"#, #"q"uote"#, "{}"),
        (#"{"v":1,"id":"z","body":{"a":1},"ok":true}"#, "z", #"{"a":1}"#),
        (#"{"v":1,"id":"w","ok":false,"error":{"code":"internal","message":"m"}}"#, "w", nil),
    ] as [(String, String, String?)])
    func otherLayouts(frame: String, id: String, body: String?) {
        #expect(ReplyEnvelope.requestID(of: Data(frame.utf8)) == id)
        #expect(ReplyEnvelope.successBody(of: Data(frame.utf8)) == body.map { Data($0.utf8) })
    }

    @Test("every cut of a written reply is read without a trap: no id before the id's closing quote")
    func everyPrefix() {
        let frame = ReplyEnvelope.success(id: "r-3", rawBody: Array(Self.post.utf8))
        let idEnds = #"{"v":1,"id":"r-3""#.utf8.count
        for length in 0...frame.count {
            let cut = frame.prefix(length)
            #expect(ReplyEnvelope.requestID(of: cut) == (length >= idEnds ? "r-3" : nil), "cut at \(length)")
            _ = ReplyEnvelope.successBody(of: cut)
        }
        #expect(ReplyEnvelope.requestID(of: Data("not json".utf8)) == nil)
        #expect(ReplyEnvelope.successBody(of: Data()) == nil)
    }
}
