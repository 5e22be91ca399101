import Foundation

/// Base64url without padding (RFC 4648 §5), as JWTs and JWKs use it, and as
/// cursors are written: by hand over bytes, since a search writes one per page and
/// Foundation's base64 plus three `replacingOccurrences` cost more than the search.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Each byte of the alphabet's value, 0xFF for bytes outside it.
    private static let values: [UInt8] = {
        var values = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { values[Int(byte)] = UInt8(index) }
        return values
    }()

    public static func encode(_ data: some DataProtocol) -> String {
        let bytes = Array(data)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
            out.append(alphabet[Int(chunk >> 6 & 63)])
            out.append(alphabet[Int(chunk & 63)])
            index += 3
        }
        switch bytes.count - index {
        case 1:
            let chunk = UInt32(bytes[index]) << 16
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
        case 2:
            let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out.append(alphabet[Int(chunk >> 18 & 63)])
            out.append(alphabet[Int(chunk >> 12 & 63)])
            out.append(alphabet[Int(chunk >> 6 & 63)])
        default:
            break
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of unpadded base64url text; nil for anything else (padding, `+`,
    /// `/`, a length no encoding has, or stray bits in the last character).
    public static func decode(_ text: String) -> Data? {
        let input = Array(text.utf8)
        guard input.count % 4 != 1 else { return nil }
        var out = Data()
        out.reserveCapacity(input.count * 3 / 4)
        var chunk: UInt32 = 0
        var bits = 0
        for byte in input {
            let value = values[Int(byte)]
            guard value != 0xFF else { return nil }
            chunk = chunk << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: chunk >> UInt32(bits)))
                chunk &= (1 << UInt32(bits)) - 1
            }
        }
        // Canonical text only: the bits left over must be zero.
        guard chunk == 0 else { return nil }
        return out
    }
}
