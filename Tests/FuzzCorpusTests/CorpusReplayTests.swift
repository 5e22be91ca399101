import Foundation
import RequestFuzzing
import TestThreads
import Testing
import Wire

/// Every input of the committed fuzz corpus (the seeds, and what `make fuzz` kept
/// for reaching new code) answered by the five services as the protocol promises.
@Suite(.ownThread) struct CorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzzing/Corpus")

    @Test func everyCorpusInputIsAnsweredWithinTheProtocol() throws {
        let files = try CorpusFiles.list(Self.corpus.path)
        #expect(files.count >= 60, "the corpus holds at least a seed per op")
        let stack = try FuzzedStack(freshFixtures: true)
        for file in files {
            do {
                try stack.check(Array(try Data(contentsOf: file)))
            } catch {
                Issue.record("\(file.lastPathComponent): \(error)")
            }
        }
    }

    /// The check is not blind: `internal`, `unavailable`, an unknown code, a
    /// malformed reply and no reply at all are findings; the protocol's refusals are not.
    @Test func repliesThatBreakTheProtocolAreFindings() throws {
        let broken: [[Data]] = [
            [ReplyEnvelope.failure(id: "x", error: .internal)],
            [ReplyEnvelope.failure(id: "x", error: .unavailable("down"))],
            [ReplyEnvelope.failure(id: "x", error: ServiceError(code: ErrorCode("oops"), message: "?"))],
            [Data(#"{"v":1,"id":"x"}"#.utf8)],
            [Data("not json".utf8)],
            [],
        ]
        for reply in broken {
            #expect(throws: FuzzedStack.Finding.self) { try FuzzedStack.verify(reply, from: "toy") }
        }
        #expect(try FuzzedStack.verify([ReplyEnvelope.failure(id: "x", error: .notFound("no such post"))], from: "toy") == .notFound)
        #expect(try FuzzedStack.verify([ReplyEnvelope.success(id: "x", rawBody: Array("{}".utf8))], from: "toy") == nil)
    }
}
