import Foundation

/// Reads one member of a JSON object, at its top level or along a path of nested
/// objects (a post's `version` in `{"post":{…}}`), without parsing the rest: the
/// other members' values are stepped over (only quotes, backslashes and brackets
/// looked at), so a reply's `nextCursor` costs one pass over its bytes rather than a
/// tree of every hit in it.
public enum JSONMemberScanner {
    /// The value of the member `key` at the top level of the object `text`; nil when
    /// it has no such member, or `text` is not a well-formed object as far as read.
    public static func member(_ key: String, of text: Data) -> JSONValue? {
        member(at: [key], of: text)
    }

    /// The value at `path` in the object `text`: `["post", "version"]` is the member
    /// `version` of the object that is the top level's member `post`. Only that value
    /// is parsed; nil when a step is missing or is not an object.
    public static func member(at path: [String], of text: Data) -> JSONValue? {
        guard !path.isEmpty else { return nil }
        return text.withUnsafeBytes { raw -> JSONValue? in
            var scanner = Scanner(bytes: raw.bindMemory(to: UInt8.self))
            // Each step reads on from the value the step before found, so an object on
            // the path is read only up to the member wanted, not stepped over first.
            for key in path {
                guard scanner.findMember(key.utf8) else { return nil }
            }
            let start = scanner.index
            guard scanner.skipValue() else { return nil }
            return try? JSONParser.parse(UnsafeBufferPointer(rebasing: scanner.bytes[start..<scanner.index]))
        }
    }

    /// Steps through a JSON text's bytes. Every step checks the end of the bytes: a text
    /// cut short anywhere reads as "not found", never past its end.
    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")

        /// In the object that starts here, moves to the value of the member `wanted`;
        /// false when it has none, or is no object as far as read.
        mutating func findMember(_ wanted: String.UTF8View) -> Bool {
            guard skipSpace(), take(UInt8(ascii: "{")), skipSpace() else { return false }
            if bytes[index] == UInt8(ascii: "}") { return false }
            while true {
                let nameStart = index + 1
                guard skipString() else { return false }
                let name = bytes[nameStart..<(index - 1)]
                guard skipSpace(), take(UInt8(ascii: ":")), skipSpace() else { return false }
                if Self.matches(name, wanted) { return true }
                guard skipValue(), skipSpace() else { return false }
                if take(UInt8(ascii: "}")) { return false }
                guard take(UInt8(ascii: ",")), skipSpace() else { return false }
            }
        }

        static func isSpace(_ byte: UInt8) -> Bool {
            byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
        }

        /// Steps over white space; false at the end of the text.
        mutating func skipSpace() -> Bool {
            while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
            return index < bytes.count
        }

        mutating func take(_ byte: UInt8) -> Bool {
            guard index < bytes.count, bytes[index] == byte else { return false }
            index += 1
            return true
        }

        /// Steps over the string whose opening quote is here (escapes as written);
        /// false when there is none, or it does not end. Most of a reply's bytes are in
        /// strings, so the closing quote is looked for with `memchr`: a quote found is
        /// the string's end unless an odd run of backslashes stands before it.
        mutating func skipString() -> Bool {
            guard index < bytes.count, bytes[index] == Self.quote, let base = bytes.baseAddress else { return false }
            var at = index + 1
            while at < bytes.count {
                guard let found = memchr(base + at, Int32(Self.quote), bytes.count - at) else { return false }
                let end = base.distance(to: found.assumingMemoryBound(to: UInt8.self))
                // The run stops at the opening quote at the latest.
                var backslashes = 0
                while bytes[end - 1 - backslashes] == Self.backslash { backslashes += 1 }
                if backslashes % 2 == 0 {
                    index = end + 1
                    return true
                }
                at = end + 1
            }
            return false
        }

        /// Steps over a whole value: a string with its quotes, an object or array with
        /// everything in it, or a number or literal. False when it does not end.
        mutating func skipValue() -> Bool {
            guard index < bytes.count else { return false }
            switch bytes[index] {
            case Self.quote:
                return skipString()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                while index < bytes.count {
                    switch bytes[index] {
                    case Self.quote:
                        guard skipString() else { return false }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        if depth == 0 {
                            index += 1
                            return true
                        }
                    default:
                        break
                    }
                    index += 1
                }
                return false
            default:
                while index < bytes.count {
                    let byte = bytes[index]
                    if Self.isSpace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]") {
                        break
                    }
                    index += 1
                }
                return true
            }
        }

        /// A member's name against the wanted one; a name written with escapes is
        /// compared as what it spells.
        static func matches(_ name: Slice<UnsafeBufferPointer<UInt8>>, _ wanted: String.UTF8View) -> Bool {
            guard name.contains(backslash) else {
                guard name.count == wanted.count else { return false }
                return wanted.withContiguousStorageIfAvailable { name.elementsEqual($0) } ?? name.elementsEqual(wanted)
            }
            let quoted = Data([quote] + Array(name) + [quote])
            guard case .string(let decoded)? = try? JSONParser.parse(quoted) else { return false }
            return decoded.utf8.elementsEqual(wanted)
        }
    }
}
