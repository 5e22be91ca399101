import Foundation

/// Real images for tests, and files that pretend to be images.
public enum TestImages {
    /// 3×2 JPEG written by a real encoder (Pillow, quality 50).
    public static let jpeg = Data(base64Encoded: "/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDABALDA4MChAODQ4SERATGCgaGBYWGDEjJR0oOjM9PDkzODdASFxOQERXRTc4UG1RV19iZ2hnPk1xeXBkeFxlZ2P/2wBDARESEhgVGC8aGi9jQjhCY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2NjY2P/wAARCAACAAMDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDHooorhPqD/9k=")!

    /// 3×2 lossless WebP (VP8L) written by a real encoder.
    public static let webpLossless = Data(base64Encoded: "UklGRh4AAABXRUJQVlA4TBEAAAAvAkAAAAdQjyLXo/+BiOh/AAA=")!

    /// 3×2 lossy WebP (VP8) written by a real encoder.
    public static let webpLossy = Data(base64Encoded: "UklGRjYAAABXRUJQVlA4ICoAAACQAQCdASoDAAIAAsBMJaACdLoAA5gA/u2QP4hd7G2//PTP62/j/xkAAAA=")!

    /// 8×6 images as a phone writes them, by a real encoder (Pillow 13): EXIF with the
    /// orientation (6, turned 90°), the maker (`PhoneMaker`) and a GPS position
    /// (52°5'24"N 5°7'17"E), XMP holding the position again, and a comment or text
    /// chunk `taken at home`.
    public static let jpegWithLocation = Data(base64Encoded: "/9j/4AAQSkZJRgABAQAAAQABAAD/4QCsRXhpZgAATU0AKgAAAAgAAwEPAAIAAAALAAAAMgESAAMAAAABAAYAAIglAAQAAAABAAAAPgAAAABQaG9uZU1ha2VyAAAABAABAAIAAAACTgAAAAACAAUAAAADAAAAdAADAAIAAAACRQAAAAAEAAUAAAADAAAAjAAAAAAAAAA0AAAAAQAAAAUAAAABAAHXKQAAE4gAAAAFAAAAAQAAAAcAAAABAAFDlwAAE4j/4QD0aHR0cDovL25zLmFkb2JlLmNvbS94YXAvMS4wLwA8eDp4bXBtZXRhIHhtbG5zOng9ImFkb2JlOm5zOm1ldGEvIj48cmRmOlJERiB4bWxuczpyZGY9Imh0dHA6Ly93d3cudzMub3JnLzE5OTkvMDIvMjItcmRmLXN5bnRheC1ucyMiPjxyZGY6RGVzY3JpcHRpb24geG1sbnM6ZXhpZj0iaHR0cDovL25zLmFkb2JlLmNvbS9leGlmLzEuMC8iIGV4aWY6R1BTTGF0aXR1ZGU9IjUyLDUuNDAyTiIvPjwvcmRmOlJERj48L3g6eG1wbWV0YT7//gAPdGFrZW4gYXQgaG9tZf/bAEMAAwICAwICAwMDAwQDAwQFCAUFBAQFCgcHBggMCgwMCwoLCw0OEhANDhEOCwsQFhARExQVFRUMDxcYFhQYEhQVFP/bAEMBAwQEBQQFCQUFCRQNCw0UFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFP/AABEIAAYACAMBIgACEQEDEQH/xAAfAAABBQEBAQEBAQAAAAAAAAAAAQIDBAUGBwgJCgv/xAC1EAACAQMDAgQDBQUEBAAAAX0BAgMABBEFEiExQQYTUWEHInEUMoGRoQgjQrHBFVLR8CQzYnKCCQoWFxgZGiUmJygpKjQ1Njc4OTpDREVGR0hJSlNUVVZXWFlaY2RlZmdoaWpzdHV2d3h5eoOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4eLj5OXm5+jp6vHy8/T19vf4+fr/xAAfAQADAQEBAQEBAQEBAAAAAAAAAQIDBAUGBwgJCgv/xAC1EQACAQIEBAMEBwUEBAABAncAAQIDEQQFITEGEkFRB2FxEyIygQgUQpGhscEJIzNS8BVictEKFiQ04SXxFxgZGiYnKCkqNTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqCg4SFhoeIiYqSk5SVlpeYmZqio6Slpqeoqaqys7S1tre4ubrCw8TFxsfIycrS09TV1tfY2dri4+Tl5ufo6ery8/T19vf4+fr/2gAMAwEAAhEDEQA/AMj4W/sr6N+55h7fwn/Ciiivns1zrMfrL/fM7+AeIc1/sSn/ALRI/9k=")!
    public static let pngWithLocation = Data(base64Encoded: "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAGCAIAAABxZ0isAAAAFXRFWHRDb21tZW50AHRha2VuIGF0IGhvbWV2YxoJAAAA62lUWHRYTUw6Y29tLmFkb2JlLnhtcAAAAAAAPHg6eG1wbWV0YSB4bWxuczp4PSJhZG9iZTpuczptZXRhLyI+PHJkZjpSREYgeG1sbnM6cmRmPSJodHRwOi8vd3d3LnczLm9yZy8xOTk5LzAyLzIyLXJkZi1zeW50YXgtbnMjIj48cmRmOkRlc2NyaXB0aW9uIHhtbG5zOmV4aWY9Imh0dHA6Ly9ucy5hZG9iZS5jb20vZXhpZi8xLjAvIiBleGlmOkdQU0xhdGl0dWRlPSI1Miw1LjQwMk4iLz48L3JkZjpSREY+PC94OnhtcG1ldGE+0Lp9tAAAAKRlWElmTU0AKgAAAAgAAwEPAAIAAAALAAAAMgESAAMAAAABAAYAAIglAAQAAAABAAAAPgAAAABQaG9uZU1ha2VyAAAABAABAAIAAAACTgAAAAACAAUAAAADAAAAdAADAAIAAAACRQAAAAAEAAUAAAADAAAAjAAAAAAAAAA0AAAAAQAAAAUAAAABAAHXKQAAE4gAAAAFAAAAAQAAAAcAAAABAAFDlwAAE4jQ+weiAAAAGElEQVR4nGNkYGiQY2DARCwMGgxYAT0kAPnyAjAX1AN6AAAAAElFTkSuQmCC")!
    public static let webpWithLocation = Data(base64Encoded: "UklGRgACAABXRUJQVlA4WAoAAAAMAAAABwAABQAAVlA4IFgAAABwAgCdASoIAAYAAMASJbACdLoA1AADq4vFKggAAP7+wdy85jH1ZEjbeesWt7D1vudYH0hk9v4yrlMVfvIfe//GL/OcHnnLf+poP+Pwckn/sg//FKzxeAAARVhJRqQAAABNTQAqAAAACAADAQ8AAgAAAAsAAAAyARIAAwAAAAEABgAAiCUABAAAAAEAAAA+AAAAAFBob25lTWFrZXIAAAAEAAEAAgAAAAJOAAAAAAIABQAAAAMAAAB0AAMAAgAAAAJFAAAAAAQABQAAAAMAAACMAAAAAAAAADQAAAABAAAABQAAAAEAAdcpAAATiAAAAAUAAAABAAAABwAAAAEAAUOXAAATiFhNUCDVAAAAPHg6eG1wbWV0YSB4bWxuczp4PSJhZG9iZTpuczptZXRhLyI+PHJkZjpSREYgeG1sbnM6cmRmPSJodHRwOi8vd3d3LnczLm9yZy8xOTk5LzAyLzIyLXJkZi1zeW50YXgtbnMjIj48cmRmOkRlc2NyaXB0aW9uIHhtbG5zOmV4aWY9Imh0dHA6Ly9ucy5hZG9iZS5jb20vZXhpZi8xLjAvIiBleGlmOkdQU0xhdGl0dWRlPSI1Miw1LjQwMk4iLz48L3JkZjpSREY+PC94OnhtcG1ldGE+AA==")!

    /// A valid PNG of `width`×`height` grey pixels: uncompressed deflate blocks with
    /// correct CRCs and Adler-32, as any decoder accepts.
    public static func png(width: Int, height: Int) -> Data {
        var raw = [UInt8]()
        raw.reserveCapacity((width * 3 + 1) * height)
        for _ in 0..<height {
            raw.append(0)  // filter type: none
            raw.append(contentsOf: repeatElement(128, count: width * 3))
        }
        var zlib: [UInt8] = [0x78, 0x01]
        var offset = 0
        repeat {
            let count = min(65_535, raw.count - offset)
            let isLast = offset + count == raw.count
            zlib.append(isLast ? 1 : 0)
            zlib.append(contentsOf: [UInt8(count & 0xFF), UInt8(count >> 8), UInt8(~count & 0xFF), UInt8((~count >> 8) & 0xFF)])
            zlib.append(contentsOf: raw[offset..<offset + count])
            offset += count
        } while offset < raw.count
        zlib.append(contentsOf: bigEndian(adler32(raw)))
        var header = bigEndian(UInt32(width)) + bigEndian(UInt32(height))
        header += [8, 2, 0, 0, 0]  // 8-bit RGB, no interlace
        return Data(signature + chunk("IHDR", header) + chunk("IDAT", zlib) + chunk("IEND", []))
    }

    /// A PNG header that declares 50,000 × 50,000 pixels in a file of a few bytes: a
    /// decompression bomb, to be refused from its header alone.
    public static let decompressionBomb: Data = {
        let header = bigEndian(UInt32(50_000)) + bigEndian(UInt32(50_000)) + [8, 2, 0, 0, 0]
        return Data(signature + chunk("IHDR", header) + chunk("IEND", []))
    }()

    /// The 33-byte PNG of the second security review: an IHDR declaring
    /// 4,294,967,295 × 4,294,967,295 pixels, whose product overflows a 64-bit Int, and
    /// nothing after it.
    public static let overflowingPNG: Data = {
        let header = bigEndian(UInt32.max) + bigEndian(UInt32.max) + [8, 2, 0, 0, 0]
        return Data(signature + chunk("IHDR", header))
    }()

    /// An HTML page, whatever a client names the file.
    public static let html = Data("<!DOCTYPE html><html><body><script>alert(1)</script></body></html>".utf8)

    /// A real PNG padded past `bytes` with a trailing chunk, so only its size is wrong.
    public static func oversizedPNG(bytes: Int) -> Data {
        var data = png(width: 4, height: 4)
        data.append(contentsOf: chunk("zzZz", [UInt8](repeating: 0, count: max(0, bytes - data.count))))
        return data
    }

    private static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typeBytes = Array(type.utf8)
        return bigEndian(UInt32(data.count)) + typeBytes + data + bigEndian(crc32(typeBytes + data))
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    private static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1, b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }
}
