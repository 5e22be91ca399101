import Foundation
import ImageFuzzing
import RequestFuzzing
import ServiceKitTesting
import Testing

/// Every input of the committed image corpus (the hostile seeds of
/// Tests/Fuzzing/image_seeds.py, and what `make fuzz` kept) inspected and stripped
/// as `ImageChecks` promises: no trap, stripping idempotent and bounded, the
/// orientation kept.
@Suite struct ImageCorpusReplayTests {
    static let corpus = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzzing/ImageCorpus")

    @Test func everyImageCorpusInputIsHandledAsPromised() throws {
        let files = try CorpusFiles.list(Self.corpus.path)
        #expect(files.count >= 40, "the corpus holds the hostile seeds")
        for file in files {
            do {
                try ImageChecks.check(Array(try Data(contentsOf: file)))
            } catch {
                Issue.record("\(file.lastPathComponent): \(error)")
            }
        }
    }

    /// The check is not blind: each promise it holds can be found broken.
    @Test func brokenPromisesAreFindings() throws {
        // A JPEG whose scan runs to the end of the file: stripping once dropped its last byte each time.
        let truncatedScan = TestImages.jpeg.dropLast(2) + Data([0xFF, 0x00, 0xFF, 0xD3, 0x00, 0x00])
        #expect(try ImageChecks.check(Array(truncatedScan)) == "jpeg 3×2")
        #expect(throws: ImageChecks.Finding.self) {
            try ImageChecks.verify(original: TestImages.jpeg, format: .jpeg, stripped: TestImages.jpeg.dropLast(), again: TestImages.jpeg.dropLast(2))
        }
        #expect(throws: ImageChecks.Finding.self) {
            try ImageChecks.verify(original: TestImages.jpeg, format: .jpeg, stripped: TestImages.jpeg + Data(count: 100),
                                   again: TestImages.jpeg + Data(count: 100))
        }
        // The phone's photo turned by 90°, stripped to one with no orientation.
        #expect(throws: ImageChecks.Finding.self) {
            try ImageChecks.verify(original: TestImages.jpegWithLocation, format: .jpeg, stripped: TestImages.jpeg, again: TestImages.jpeg)
        }
    }
}
