import Foundation
import Imaging

/// What an uploaded image's bytes go through before anything else looks at them —
/// `ImageProbe.inspect` (the edge runs it before any token check) and, for what it
/// accepts, `ImageMetadata.strip` and `orientation` (the services keep the stripped
/// bytes) — held to what they promise for any bytes at all:
///
/// - nothing traps (an overflow, an index past the end: the process would die);
/// - stripping is idempotent, and what it keeps strips to itself;
/// - the stripped image is no longer than the original plus one orientation block,
///   so hostile chunk sizes cannot make it grow;
/// - a JPEG's or PNG's orientation survives stripping (a WebP's only in the
///   extended format, the one that may carry EXIF).
public enum ImageChecks {
    /// A broken promise for this input.
    public struct Finding: Error, CustomStringConvertible {
        public let problem: String
        public var description: String { problem }
    }

    /// The most a stripped image may add: an APP1 segment (or PNG/WebP chunk) holding
    /// the minimal EXIF block with the orientation.
    static let orientationBlockBytes = 64

    /// Runs one input through inspection and stripping; returns how it was judged
    /// ("jpeg 3×2", or the probe's error) and throws the first broken promise.
    @discardableResult
    public static func check(_ input: [UInt8]) throws(Finding) -> String {
        let data = Data(input)
        // The production limits, and none at all: arithmetic must hold for either.
        _ = try? ImageProbe.inspect(data, maxBytes: 8 * 1024 * 1024, maxPixels: 40_000_000)
        let info: ImageInfo
        do {
            info = try ImageProbe.inspect(data, maxBytes: .max, maxPixels: .max)
        } catch {
            return "\(error)"
        }
        _ = info.pixels
        let stripped = ImageMetadata.strip(data, format: info.format)
        try verify(original: data, format: info.format, stripped: stripped, again: ImageMetadata.strip(stripped, format: info.format))
        // What is kept is inspected again by whoever serves it.
        _ = try? ImageProbe.inspect(stripped, maxBytes: .max, maxPixels: .max)
        return "\(info.format) \(info.width)×\(info.height)"
    }

    /// The promises about one stripping: `stripped` from `original`, `again` from `stripped`.
    public static func verify(original: Data, format: ImageInfo.Format, stripped: Data, again: Data) throws(Finding) {
        guard again == stripped else {
            throw Finding(problem: "stripping is not idempotent: \(stripped.count) bytes, then \(again.count)")
        }
        guard stripped.count <= original.count + orientationBlockBytes else {
            throw Finding(problem: "stripping grew \(original.count) bytes to \(stripped.count)")
        }
        let before = ImageMetadata.orientation(original, format: format)
        let after = ImageMetadata.orientation(stripped, format: format)
        if format != .webp || isExtendedWebP(Array(original)), before != after {
            throw Finding(problem: "orientation \(before.map(String.init) ?? "none") became \(after.map(String.init) ?? "none")")
        }
    }

    private static func isExtendedWebP(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 16 && Array(bytes[12..<16]) == Array("VP8X".utf8)
    }
}
