import Foundation

/// What an image's own bytes say it is.
public struct ImageInfo: Sendable, Equatable {
    public enum Format: String, Sendable {
        case jpeg, png, webp

        public var contentType: String {
            switch self {
            case .jpeg: "image/jpeg"
            case .png: "image/png"
            case .webp: "image/webp"
            }
        }
    }

    public let format: Format
    public let width: Int
    public let height: Int
    public let bytes: Int

    public init(format: Format, width: Int, height: Int, bytes: Int) {
        self.format = format
        self.width = width
        self.height = height
        self.bytes = bytes
    }

    public var contentType: String { format.contentType }
    /// Saturates instead of trapping: the dimensions come from a client's bytes.
    public var pixels: Int {
        let (product, overflow) = width.multipliedReportingOverflow(by: height)
        return overflow ? .max : product
    }
}

public enum ImageProbeError: Error, Sendable, Equatable {
    /// Not JPEG, PNG or WebP, whatever the file is called.
    case unrecognized
    /// The signature matched but the header that carries the size is missing or broken.
    case malformedHeader(ImageInfo.Format)
    case tooManyBytes(bytes: Int, limit: Int)
    /// Checked from the header alone, so a small file declaring a huge canvas is
    /// refused without being decoded.
    case tooManyPixels(width: Int, height: Int, limit: Int)
}

/// Identifies JPEG, PNG and WebP images and reads their dimensions from the header.
public enum ImageProbe {
    public static func inspect(_ data: Data, maxBytes: Int, maxPixels: Int) throws(ImageProbeError) -> ImageInfo {
        guard data.count <= maxBytes else { throw .tooManyBytes(bytes: data.count, limit: maxBytes) }
        let bytes = [UInt8](data)
        let (format, width, height) = try dimensions(bytes)
        guard width > 0, height > 0 else { throw .malformedHeader(format) }
        // A PNG header may declare 2^32-1 × 2^32-1, whose product is past Int.max.
        let (pixels, overflow) = width.multipliedReportingOverflow(by: height)
        guard !overflow, pixels <= maxPixels else {
            throw .tooManyPixels(width: width, height: height, limit: maxPixels)
        }
        return ImageInfo(format: format, width: width, height: height, bytes: data.count)
    }

    private static func dimensions(_ bytes: [UInt8]) throws(ImageProbeError) -> (ImageInfo.Format, Int, Int) {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            return try png(bytes)
        }
        if bytes.starts(with: [0xFF, 0xD8, 0xFF]) {
            return try jpeg(bytes)
        }
        if bytes.count >= 12, bytes.starts(with: Array("RIFF".utf8)), Array(bytes[8..<12]) == Array("WEBP".utf8) {
            return try webp(bytes)
        }
        throw .unrecognized
    }

    /// PNG: the first chunk is IHDR, holding big-endian width and height.
    private static func png(_ bytes: [UInt8]) throws(ImageProbeError) -> (ImageInfo.Format, Int, Int) {
        guard bytes.count >= 24, Array(bytes[12..<16]) == Array("IHDR".utf8) else { throw .malformedHeader(.png) }
        return (.png, bigEndian(bytes, 16, 4), bigEndian(bytes, 20, 4))
    }

    /// JPEG: walk the marker segments to the first start-of-frame, which holds the size.
    private static func jpeg(_ bytes: [UInt8]) throws(ImageProbeError) -> (ImageInfo.Format, Int, Int) {
        var index = 2
        while index + 4 <= bytes.count {
            guard bytes[index] == 0xFF else { throw .malformedHeader(.jpeg) }
            let marker = bytes[index + 1]
            switch marker {
            case 0xFF:
                index += 1  // fill byte
                continue
            case 0x01, 0xD0...0xD7:
                index += 2  // markers without a length
                continue
            case 0xD9, 0xDA:
                throw .malformedHeader(.jpeg)  // end of image or scan data before any frame header
            default:
                break
            }
            let length = bigEndian(bytes, index + 2, 2)
            guard length >= 2 else { throw .malformedHeader(.jpeg) }
            let isStartOfFrame = (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker)
            if isStartOfFrame {
                guard index + 9 <= bytes.count, length >= 7 else { throw .malformedHeader(.jpeg) }
                return (.jpeg, bigEndian(bytes, index + 7, 2), bigEndian(bytes, index + 5, 2))
            }
            index += 2 + length
        }
        throw .malformedHeader(.jpeg)
    }

    /// WebP: a RIFF container whose first chunk is VP8 (lossy), VP8L (lossless) or
    /// VP8X (extended, with the canvas size).
    private static func webp(_ bytes: [UInt8]) throws(ImageProbeError) -> (ImageInfo.Format, Int, Int) {
        guard bytes.count >= 30 else { throw .malformedHeader(.webp) }
        switch String(decoding: bytes[12..<16], as: UTF8.self) {
        case "VP8 ":
            guard bytes[23] == 0x9D, bytes[24] == 0x01, bytes[25] == 0x2A else { throw .malformedHeader(.webp) }
            return (.webp, littleEndian(bytes, 26, 2) & 0x3FFF, littleEndian(bytes, 28, 2) & 0x3FFF)
        case "VP8L":
            guard bytes[20] == 0x2F else { throw .malformedHeader(.webp) }
            let bits = littleEndian(bytes, 21, 4)
            return (.webp, (bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        case "VP8X":
            return (.webp, littleEndian(bytes, 24, 3) + 1, littleEndian(bytes, 27, 3) + 1)
        default:
            throw .malformedHeader(.webp)
        }
    }

    private static func bigEndian(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> Int {
        bytes[offset..<offset + count].reduce(0) { $0 << 8 | Int($1) }
    }

    private static func littleEndian(_ bytes: [UInt8], _ offset: Int, _ count: Int) -> Int {
        bytes[offset..<offset + count].reversed().reduce(0) { $0 << 8 | Int($1) }
    }
}
