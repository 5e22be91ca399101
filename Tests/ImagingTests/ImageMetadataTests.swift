import Foundation
import Imaging
import ServiceKitTesting
import Testing

@Suite("Taking the metadata out of uploaded images")
struct ImageMetadataTests {
    static let phonePhotos: [(Data, ImageInfo.Format)] = [
        (TestImages.jpegWithLocation, .jpeg), (TestImages.pngWithLocation, .png), (TestImages.webpWithLocation, .webp),
    ]

    /// What the test images carry besides pixels, as bytes a reader could find.
    static let secrets = ["GPS", "PhoneMaker", "xmpmeta", "taken at home", "XML:com.adobe.xmp"]

    private func contains(_ data: Data, _ text: String) -> Bool {
        data.range(of: Data(text.utf8)) != nil
    }

    @Test("a phone's photo loses its position, maker, XMP and comments, and keeps its orientation and size",
          arguments: phonePhotos)
    func stripsPhonePhotos(photo: Data, format: ImageInfo.Format) throws {
        // The test images do carry all of it.
        #expect(Self.secrets.filter { contains(photo, $0) }.count >= 3)
        #expect(ImageMetadata.orientation(photo, format: format) == 6)

        let stripped = ImageMetadata.strip(photo, format: format)
        for secret in Self.secrets {
            #expect(!contains(stripped, secret), "\(format) still holds \(secret)")
        }
        #expect(ImageMetadata.orientation(stripped, format: format) == 6)
        let before = try ImageProbe.inspect(photo, maxBytes: 1 << 20, maxPixels: 1 << 20)
        let after = try ImageProbe.inspect(stripped, maxBytes: 1 << 20, maxPixels: 1 << 20)
        #expect((after.format, after.width, after.height) == (before.format, before.width, before.height))
        #expect(stripped.count < photo.count)
        // Stripping what is stripped changes nothing.
        #expect(ImageMetadata.strip(stripped, format: format) == stripped)
    }

    @Test("the pixels are copied byte for byte, not re-encoded")
    func pixelsUntouched() throws {
        // JPEG: tables, frame header and scan data, from the first quantisation table to the end.
        let jpeg = TestImages.jpegWithLocation
        let strippedJPEG = ImageMetadata.strip(jpeg, format: .jpeg)
        let tables = Data([0xFF, 0xDB])
        let original = try #require(jpeg.range(of: tables)).lowerBound
        let kept = try #require(strippedJPEG.range(of: tables)).lowerBound
        #expect(jpeg[original...] == strippedJPEG[kept...])
        // PNG and WebP: the image's own chunks, unchanged.
        let idat = Data("IDAT".utf8), vp8 = Data("VP8 ".utf8)
        #expect(chunk(after: idat, in: TestImages.pngWithLocation) == chunk(after: idat, in: ImageMetadata.strip(TestImages.pngWithLocation, format: .png)))
        #expect(chunk(after: vp8, in: TestImages.webpWithLocation) == chunk(after: vp8, in: ImageMetadata.strip(TestImages.webpWithLocation, format: .webp)))
    }

    /// The 64 bytes from a chunk's type on: enough to hold the small images' pixel data.
    private func chunk(after type: Data, in data: Data) -> Data? {
        data.range(of: type).map { data[$0.lowerBound..<min(data.count, $0.lowerBound + 64)] }
    }

    @Test("images without metadata come out exactly as they went in", arguments: [
        (TestImages.jpeg, ImageInfo.Format.jpeg), (TestImages.webpLossless, .webp), (TestImages.webpLossy, .webp),
        (TestImages.png(width: 5, height: 3), .png),
    ])
    func plainImagesUnchanged(image: Data, format: ImageInfo.Format) {
        #expect(ImageMetadata.strip(image, format: format) == image)
    }

    @Test("whatever follows a JPEG's end (a second image with its own EXIF) goes too")
    func trailingDataGoes() {
        let appended = TestImages.jpeg + TestImages.jpegWithLocation
        #expect(ImageMetadata.strip(appended, format: .jpeg) == TestImages.jpeg)
    }
}
