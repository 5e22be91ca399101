import Foundation
import Wire

/// The protocol's rules for images (avatars and post images), as errors.
public enum ImageRules {
    /// An uploaded image as it is kept: checked, then without its metadata (EXIF with
    /// the GPS position, XMP, text), the pixels untouched. `info.bytes` is the size kept.
    public static func accept(_ data: Data, field: String) throws -> (info: ImageInfo, bytes: Data) {
        let sent = try check(data, field: field)
        let kept = ImageMetadata.strip(data, format: sent.format)
        return (ImageInfo(format: sent.format, width: sent.width, height: sent.height, bytes: kept.count), kept)
    }

    public static func check(_ data: Data, field: String) throws -> ImageInfo {
        do {
            return try ImageProbe.inspect(data, maxBytes: Limits.imageBytes, maxPixels: Limits.imagePixels)
        } catch {
            switch error {
            case .unrecognized, .malformedHeader:
                throw ServiceError.invalidArgument(field: field, "the \(field) must be a JPEG, PNG or WebP image")
            case .tooManyBytes(let bytes, let limit):
                throw ServiceError.tooLarge("the \(field) is \(bytes) bytes, over the limit of \(limit)")
            case .tooManyPixels(let width, let height, let limit):
                throw ServiceError.tooLarge("the \(field) is \(width)×\(height) pixels, over the limit of \(limit)")
            }
        }
    }
}
