import Foundation

/// Takes out what an image says besides its pixels: EXIF (with the GPS position a
/// phone writes into every photo), XMP, IPTC, comments and text chunks, and data
/// after the image's end. The pixels are copied byte for byte, never decoded or
/// re-encoded.
///
/// What is kept is what a viewer needs to show the pixels as meant: JPEG's JFIF,
/// ICC profile and Adobe segments, PNG's critical and colour chunks, WebP's
/// image, alpha, animation and ICC chunks; and the orientation, the one EXIF value
/// that changes how the image is shown, rewritten alone into a minimal EXIF block.
public enum ImageMetadata {
    /// The image without its metadata. `data` must have passed `ImageProbe.inspect`
    /// as `format`; a structure that breaks off early is kept up to where it breaks.
    public static func strip(_ data: Data, format: ImageInfo.Format) -> Data {
        let bytes = [UInt8](data)
        switch format {
        case .jpeg: return Data(JPEG.strip(bytes))
        case .png: return Data(PNG.strip(bytes))
        case .webp: return Data(WebP.strip(bytes))
        }
    }

    /// The EXIF orientation (1–8) an image carries, or nil without one.
    public static func orientation(_ data: Data, format: ImageInfo.Format) -> Int? {
        let bytes = [UInt8](data)
        switch format {
        case .jpeg: return JPEG.exifBlocks(bytes).lazy.compactMap(EXIF.orientation).first
        case .png: return PNG.chunks(bytes).lazy.filter { $0.type == "eXIf" }.compactMap { EXIF.orientation(Array(bytes[$0.data])) }.first
        case .webp: return WebP.chunks(bytes).lazy.filter { $0.type == "EXIF" }.compactMap { EXIF.orientation(Array(bytes[$0.data])) }.first
        }
    }
}

// MARK: EXIF

/// The few bytes of EXIF this needs: reading the orientation tag of IFD0, and
/// writing a block that holds only it.
enum EXIF {
    static let jpegPrefix: [UInt8] = Array("Exif".utf8) + [0, 0]
    private static let orientationTag = 0x0112

    /// The orientation in a TIFF-structured EXIF block (with or without JPEG's
    /// `Exif\0\0` prefix), when it is a valid 2–8 (1 is the default and needs none).
    static func orientation(_ block: [UInt8]) -> Int? {
        let tiff = block.starts(with: jpegPrefix) ? Array(block.dropFirst(jpegPrefix.count)) : block
        guard tiff.count >= 8 else { return nil }
        let bigEndian: Bool
        switch (tiff[0], tiff[1]) {
        case (0x4D, 0x4D): bigEndian = true
        case (0x49, 0x49): bigEndian = false
        default: return nil
        }
        func read(_ offset: Int, _ count: Int) -> Int? {
            guard offset >= 0, offset + count <= tiff.count else { return nil }
            let slice = tiff[offset..<offset + count]
            return (bigEndian ? Array(slice) : slice.reversed()).reduce(0) { $0 << 8 | Int($1) }
        }
        guard read(2, 2) == 42, let ifd = read(4, 4), let entries = read(ifd, 2) else { return nil }
        for index in 0..<entries {
            let entry = ifd + 2 + index * 12
            guard read(entry, 2) == orientationTag else { continue }
            // SHORT, one value, held in the first two bytes of the value field.
            guard read(entry + 2, 2) == 3, read(entry + 4, 4) == 1, let value = read(entry + 8, 2) else { return nil }
            return (2...8).contains(value) ? value : nil
        }
        return nil
    }

    /// A big-endian TIFF block whose IFD0 holds the orientation alone.
    static func block(orientation: Int) -> [UInt8] {
        [0x4D, 0x4D, 0x00, 0x2A, 0, 0, 0, 8,  // "MM", 42, IFD0 at 8
         0, 1,  // one entry
         0x01, 0x12, 0, 3, 0, 0, 0, 1, 0, UInt8(orientation), 0, 0,  // Orientation, SHORT, 1, value
         0, 0, 0, 0]  // no next IFD
    }
}

// MARK: JPEG

private enum JPEG {
    /// The segments a viewer needs besides the image itself: JFIF/JFXX (APP0), ICC
    /// profiles (APP2 `ICC_PROFILE`) and Adobe's colour transform (APP14). Every
    /// other APPn and comment goes; so does APP2's multi-picture index, whose extra
    /// images (appended after the end, each with its own EXIF) go with the tail.
    private static func keeps(marker: UInt8, payload: ArraySlice<UInt8>) -> Bool {
        switch marker {
        case 0xE0, 0xEE: true
        case 0xE2: payload.starts(with: Array("ICC_PROFILE".utf8) + [0])
        case 0xE1...0xEF, 0xFE: false
        default: true
        }
    }

    static func strip(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0xFF, 0xD8]
        out.reserveCapacity(bytes.count)
        let orientation = exifBlocks(bytes).lazy.compactMap(EXIF.orientation).first
        var wroteOrientation = false
        walk(bytes) { piece in
            switch piece {
            case .segment(let marker, let range):
                // The orientation goes where the EXIF was: right after JFIF, or first.
                if !wroteOrientation, let orientation, marker != 0xE0 {
                    let block = EXIF.jpegPrefix + EXIF.block(orientation: orientation)
                    out += [0xFF, 0xE1, UInt8((block.count + 2) >> 8), UInt8((block.count + 2) & 0xFF)] + block
                    wroteOrientation = true
                }
                if keeps(marker: marker, payload: bytes[range.lowerBound + 4..<range.upperBound]) {
                    out += bytes[range]
                }
            case .raw(let range):
                out += bytes[range]
            }
        }
        return out
    }

    /// The payloads of the APP1 segments that hold EXIF.
    static func exifBlocks(_ bytes: [UInt8]) -> [[UInt8]] {
        var blocks: [[UInt8]] = []
        walk(bytes) { piece in
            if case .segment(0xE1, let range) = piece, bytes[range.lowerBound + 4..<range.upperBound].starts(with: EXIF.jpegPrefix) {
                blocks.append(Array(bytes[range.lowerBound + 4..<range.upperBound]))
            }
        }
        return blocks
    }

    enum Piece {
        /// A marker segment with its length field: `FF marker len len payload…`.
        case segment(marker: UInt8, range: Range<Int>)
        /// Bytes copied as they are: markers without a length, entropy-coded data, EOI.
        case raw(Range<Int>)
    }

    /// Walks from after SOI to EOI, and stops there: what follows the end is not
    /// part of the image.
    private static func walk(_ bytes: [UInt8], _ visit: (Piece) -> Void) {
        var index = 2
        while index + 1 < bytes.count {
            guard bytes[index] == 0xFF else { return }
            let marker = bytes[index + 1]
            switch marker {
            case 0xFF:
                index += 1  // fill byte
                continue
            case 0xD9:
                visit(.raw(index..<index + 2))
                return
            case 0x01, 0xD0...0xD7:
                visit(.raw(index..<index + 2))
                index += 2
                continue
            case 0x00, 0x02...0xBF:
                // Not a marker (a stuffed byte, or reserved): the file is corrupt from here,
                // and reading on would take scan data for segments.
                return
            default:
                break
            }
            guard index + 4 <= bytes.count else { return }
            let length = Int(bytes[index + 2]) << 8 | Int(bytes[index + 3])
            guard length >= 2, index + 2 + length <= bytes.count else { return }
            visit(.segment(marker: marker, range: index..<index + 2 + length))
            index += 2 + length
            if marker == 0xDA {
                // The scan's entropy-coded data runs to the next marker that is neither
                // a stuffed 0xFF00 nor a restart marker.
                let start = index
                while index + 1 < bytes.count {
                    if bytes[index] == 0xFF, bytes[index + 1] != 0x00, !(0xD0...0xD7).contains(bytes[index + 1]) { break }
                    index += 1
                }
                // A scan that runs to the end of a truncated file keeps its last byte too.
                if index + 1 >= bytes.count { index = bytes.count }
                visit(.raw(start..<index))
            }
        }
    }
}

// MARK: PNG

private enum PNG {
    static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    /// Text and EXIF: where cameras and editors put positions, names and dates.
    private static let dropped: Set<String> = ["eXIf", "tEXt", "zTXt", "iTXt"]

    struct Chunk {
        let type: String
        /// The whole chunk: length, type, data, CRC.
        let range: Range<Int>
        let data: Range<Int>
    }

    /// The chunks up to and including IEND.
    static func chunks(_ bytes: [UInt8]) -> [Chunk] {
        var chunks: [Chunk] = []
        var index = signature.count
        while index + 12 <= bytes.count {
            let length = bytes[index..<index + 4].reduce(0) { $0 << 8 | Int($1) }
            guard index + 12 + length <= bytes.count else { break }
            let type = String(decoding: bytes[index + 4..<index + 8], as: UTF8.self)
            chunks.append(Chunk(type: type, range: index..<index + 12 + length, data: index + 8..<index + 8 + length))
            index += 12 + length
            if type == "IEND" { break }
        }
        return chunks
    }

    static func strip(_ bytes: [UInt8]) -> [UInt8] {
        let all = chunks(bytes)
        let orientation = all.lazy.filter { $0.type == "eXIf" }.compactMap { EXIF.orientation(Array(bytes[$0.data])) }.first
        var out = signature
        out.reserveCapacity(bytes.count)
        var wroteOrientation = false
        for chunk in all {
            if chunk.type == "eXIf", let orientation, !wroteOrientation {
                out += Self.chunk("eXIf", EXIF.block(orientation: orientation))
                wroteOrientation = true
            }
            if !dropped.contains(chunk.type) { out += bytes[chunk.range] }
        }
        return out
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        return bigEndian(UInt32(data.count)) + body + bigEndian(CRC32.checksum(body))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

/// The CRC-32 of PNG chunks (ISO 3309, as zlib computes it).
enum CRC32 {
    private static let table: [UInt32] = (0..<256).map { value in
        var crc = UInt32(value)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        return crc
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        ~bytes.reduce(0xFFFF_FFFF) { crc, byte in (crc >> 8) ^ table[Int((crc ^ UInt32(byte)) & 0xFF)] }
    }
}

// MARK: WebP

private enum WebP {
    /// The chunks that make the image: VP8X's header, its colour profile, animation,
    /// frames, alpha, and the bitstreams. EXIF, XMP and anything unknown go.
    private static let kept: Set<String> = ["VP8X", "ICCP", "ANIM", "ANMF", "ALPH", "VP8 ", "VP8L"]
    /// VP8X flag bits: EXIF present, XMP present.
    private static let exifFlag: UInt8 = 0x08, xmpFlag: UInt8 = 0x04

    struct Chunk {
        let type: String
        /// The whole chunk: FourCC, size, data and its padding byte.
        let range: Range<Int>
        let data: Range<Int>
    }

    static func chunks(_ bytes: [UInt8]) -> [Chunk] {
        var chunks: [Chunk] = []
        var index = 12
        while index + 8 <= bytes.count {
            let size = bytes[index + 4..<index + 8].reversed().reduce(0) { $0 << 8 | Int($1) }
            let padded = size + size % 2
            guard index + 8 + size <= bytes.count else { break }
            let type = String(decoding: bytes[index..<index + 4], as: UTF8.self)
            chunks.append(Chunk(type: type, range: index..<min(bytes.count, index + 8 + padded), data: index + 8..<index + 8 + size))
            index += 8 + padded
        }
        return chunks
    }

    static func strip(_ bytes: [UInt8]) -> [UInt8] {
        let all = chunks(bytes)
        let orientation = all.lazy.filter { $0.type == "EXIF" }.compactMap { EXIF.orientation(Array(bytes[$0.data])) }.first
        let extended = all.first?.type == "VP8X"
        var body: [UInt8] = Array("WEBP".utf8)
        body.reserveCapacity(bytes.count)
        for chunk in all where kept.contains(chunk.type) {
            var piece = Array(bytes[chunk.range])
            if chunk.type == "VP8X", piece.count > 8 {
                piece[8] &= ~(exifFlag | xmpFlag)
                if orientation != nil { piece[8] |= exifFlag }
            }
            body += piece
        }
        // The orientation's EXIF chunk goes at the end, where the container puts EXIF;
        // only an extended (VP8X) file may carry one.
        if extended, let orientation {
            let block = EXIF.block(orientation: orientation)
            body += Array("EXIF".utf8) + littleEndian(UInt32(block.count)) + block
        }
        return Array("RIFF".utf8) + littleEndian(UInt32(body.count)) + body
    }

    private static func littleEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
    }
}
