import Foundation
import Testing
@testable import Wire

@Suite("Request envelopes")
struct EnvelopeTests {
    private func decode(_ text: String) -> Result<RequestEnvelope, EnvelopeError> {
        Result { () throws(EnvelopeError) in try RequestEnvelope.decode(frames: [Data(text.utf8)]) }
    }

    private func failure(_ text: String) -> EnvelopeError? {
        if case .failure(let error) = decode(text) { return error }
        return nil
    }

    @Test("reads a request with a body, token and trailing newline")
    func readsRequest() throws {
        let envelope = try decode(#"{"v":1,"id":"ab-1_2","op":"geo.search","token":"t","body":{"lat":1}}"# + "\n").get()
        #expect(envelope.id == "ab-1_2")
        #expect(envelope.op == "geo.search")
        #expect(envelope.token == "t")
        #expect(envelope.body["lat"] == .number(.integer(1)))
    }

    @Test("an omitted body is an empty object")
    func omittedBody() throws {
        #expect(try decode(#"{"v":1,"id":"a","op":"auth.health"}"#).get().body.isEmpty)
    }

    @Test("checks fields in the protocol's order, echoing the id when it is readable", arguments: [
        (#"[1]"#, "", "must be a JSON object"),
        (#"{"id":"abc","op":"x"}"#, "abc", "v is required"),
        (#"{"v":2,"id":"abc","op":"x"}"#, "abc", "v must be 1"),
        (#"{"v":"1","id":"abc","op":"x"}"#, "abc", "v must be 1"),
        (#"{"v":1,"op":"x"}"#, "", "id is required"),
        (#"{"v":1,"id":"a b","op":"x"}"#, "", "id must be"),
        (#"{"v":1,"id":""}"#, "", "id must be"),
        (#"{"v":1,"id":7,"op":"x"}"#, "", "id must be"),
        (#"{"v":1,"id":"abc"}"#, "abc", "op is required"),
        (#"{"v":1,"id":"abc","op":5}"#, "abc", "op is required"),
        (#"{"v":1,"id":"abc","op":"x","token":5}"#, "abc", "token must be a string"),
        (#"{"v":1,"id":"abc","op":"x","body":[]}"#, "abc", "body must be an object"),
        (#"{"v":1,"id":"abc","op":"x","body":null}"#, "abc", "body must be an object"),
    ])
    func checksInOrder(text: String, echoedID: String, message: String) {
        let error = failure(text)
        #expect(error?.error.code == .badRequest)
        #expect(error?.requestID == echoedID)
        #expect(error?.error.message.contains(message) == true, "\(error?.error.message ?? "no error")")
    }

    @Test("a raw newline inside frame 0 is refused")
    func rawNewline() {
        #expect(failure("{\"v\":1,\n\"id\":\"a\",\"op\":\"x\"}")?.error.code == .badRequest)
    }

    @Test("an id of 64 characters is accepted and one of 65 refused")
    func idLength() {
        #expect(failure(#"{"v":1,"id":"\#(String(repeating: "a", count: 64))","op":"x"}"#) == nil)
        #expect(failure(#"{"v":1,"id":"\#(String(repeating: "a", count: 65))","op":"x"}"#)?.error.code == .badRequest)
    }

    @Test("a frame 0 over 1 MiB is too_large before it is parsed")
    func oversizedFrame() {
        let big = Data(repeating: 0x20, count: Limits.importFrame0Bytes + 1)
        let result = Result { () throws(EnvelopeError) in try RequestEnvelope.decode(frames: [big]) }
        guard case .failure(let error) = result else { Issue.record("accepted"); return }
        #expect(error.error.code == .tooLarge)
        #expect(error.error.message.contains("\(Limits.importFrame0Bytes)"), "\(error.error.message)")
        // The answer carries the request's id, found without parsing the rest.
        let filler = String(repeating: "x", count: Limits.importFrame0Bytes)
        let withID = Data(#"{"v":1,"op":"catalogue.posts.import","body":{"posts":[{"text":"\#(filler)"}]},"id":"big-1"}"#.utf8)
        let named = Result { () throws(EnvelopeError) in try RequestEnvelope.decode(frames: [withID]) }
        guard case .failure(let namedError) = named else { Issue.record("accepted"); return }
        #expect(namedError.requestID == "big-1" && namedError.error.code == .tooLarge)
    }

    @Test("replies are one line and read back")
    func replies() throws {
        let ok = ReplyEnvelope.success(id: "a1", body: .object(JSONObject([("n", .number(.integer(2)))])))
        #expect(String(decoding: ok, as: UTF8.self) == #"{"v":1,"id":"a1","ok":true,"body":{"n":2}}"#)
        let decoded = ReplyEnvelope.decode(ok)
        #expect(decoded.id == "a1")
        #expect(try decoded.result.get()["n"] == .number(.integer(2)))

        let error = ServiceError.rateLimited("slow down", retryAfterMs: 1500)
        let failed = ReplyEnvelope.failure(id: "a2", error: error)
        #expect(!String(decoding: failed, as: UTF8.self).contains("\n"))
        guard case .failure(let readBack) = ReplyEnvelope.decode(failed).result else { Issue.record("not a failure"); return }
        #expect(readBack == error)
    }
}
