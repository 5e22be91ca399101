import Foundation
import Imaging
import ServiceKitTesting
import Testing

@Suite("Telling images by their bytes")
struct ImageProbeTests {
    private func inspect(_ data: Data) throws(ImageProbeError) -> ImageInfo {
        try ImageProbe.inspect(data, maxBytes: 5 * 1024 * 1024, maxPixels: 40_000_000)
    }

    @Test("reads type and size of real JPEG, PNG and WebP files", arguments: [
        (TestImages.jpeg, ImageInfo.Format.jpeg, 3, 2),
        (TestImages.webpLossless, .webp, 3, 2),
        (TestImages.webpLossy, .webp, 3, 2),
        (TestImages.png(width: 7, height: 5), .png, 7, 5),
    ])
    func readsRealImages(data: Data, format: ImageInfo.Format, width: Int, height: Int) throws {
        let info = try inspect(data)
        #expect(info.format == format)
        #expect(info.width == width)
        #expect(info.height == height)
        #expect(info.bytes == data.count)
    }

    @Test("an HTML page named .png is not an image")
    func htmlIsRefused() {
        #expect(throws: ImageProbeError.unrecognized) { try inspect(TestImages.html) }
    }

    @Test("a few bytes declaring 50,000 × 50,000 pixels are refused from the header")
    func decompressionBomb() {
        #expect(throws: ImageProbeError.tooManyPixels(width: 50_000, height: 50_000, limit: 40_000_000)) {
            try inspect(TestImages.decompressionBomb)
        }
    }

    @Test("33 bytes declaring 2^32-1 × 2^32-1 pixels, a product past Int.max, are too many pixels, not a trap")
    func overflowingDimensions() {
        #expect(TestImages.overflowingPNG.count == 33)
        #expect(throws: ImageProbeError.tooManyPixels(width: 4_294_967_295, height: 4_294_967_295, limit: 40_000_000)) {
            try inspect(TestImages.overflowingPNG)
        }
        #expect(throws: ImageProbeError.tooManyPixels(width: 4_294_967_295, height: 4_294_967_295, limit: .max)) {
            try ImageProbe.inspect(TestImages.overflowingPNG, maxBytes: .max, maxPixels: .max)
        }
        #expect(ImageInfo(format: .png, width: 4_294_967_295, height: 4_294_967_295, bytes: 33).pixels == .max)
    }

    @Test("a 6 MiB file is refused by its size")
    func oversized() {
        let data = TestImages.oversizedPNG(bytes: 6 * 1024 * 1024)
        #expect(throws: ImageProbeError.tooManyBytes(bytes: data.count, limit: 5 * 1024 * 1024)) { try inspect(data) }
    }

    @Test("a truncated header is malformed, not a crash", arguments: [
        Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0]),
        Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00]),
        Data([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01, 0xFF, 0xD9]),
        TestImages.jpeg.prefix(100),
        Data("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8),
    ])
    func truncated(data: Data) {
        #expect {
            try inspect(data)
        } throws: { error in
            if case .malformedHeader = error as? ImageProbeError { return true }
            return false
        }
    }
}
