import Foundation

/// Reads one member of a JSON object, at its top level or along a path of nested
/// objects (a post's `version` in `{"post":{…}}`), without parsing the rest: the
/// other members' values are stepped over byte by byte (strings and nesting only),
/// so a reply's `nextCursor` costs one pass over its bytes rather than a tree of
/// every hit in it.
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
            let bytes = raw.bindMemory(to: UInt8.self)
            // The object looked in: its bytes' place in `text`.
            var object = 0..<bytes.count
            for key in path {
                var scanner = Scanner(bytes: UnsafeBufferPointer(rebasing: bytes[object]))
                guard let value = scanner.member(Array(key.utf8)) else { return nil }
                object = (object.lowerBound + value.lowerBound)..<(object.lowerBound + value.upperBound)
            }
            return try? JSONParser.parse(Data(UnsafeRawBufferPointer(rebasing: raw[object])))
        }
    }

    private struct Scanner {
        let bytes: UnsafeBufferPointer<UInt8>
        var index = 0

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        /// The bytes of the value of the member `wanted` of the object that starts
        /// here; nil when it has none, or is no object as far as read.
        mutating func member(_ wanted: [UInt8]) -> Range<Int>? {
            guard skipSpace(), take(UInt8(ascii: "{")) else { return nil }
            guard skipSpace() else { return nil }
            if peek == UInt8(ascii: "}") { return nil }
            while true {
                guard skipSpace(), let name = string(), skipSpace(), take(UInt8(ascii: ":")),
                      skipSpace(), let value = value() else { return nil }
                if Self.matches(bytes[name], wanted) { return value }
                guard skipSpace() else { return nil }
                if take(UInt8(ascii: "}")) { return nil }
                guard take(UInt8(ascii: ",")) else { return nil }
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
            guard peek == byte else { return false }
            index += 1
            return true
        }

        /// A string's bytes between its quotes (escapes as written).
        mutating func string() -> Range<Int>? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            let start = index
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\\"): index += 2
                case UInt8(ascii: "\""):
                    index += 1
                    return start..<(index - 1)
                default: index += 1
                }
            }
            return nil
        }

        /// A whole value's bytes: a string with its quotes, an object or array with
        /// everything in it, or a number or literal.
        mutating func value() -> Range<Int>? {
            let start = index
            switch peek {
            case UInt8(ascii: "\"")?:
                guard string() != nil else { return nil }
            case UInt8(ascii: "{")?, UInt8(ascii: "[")?:
                var depth = 0
                repeat {
                    guard let byte = peek else { return nil }
                    switch byte {
                    case UInt8(ascii: "\""):
                        guard string() != nil else { return nil }
                        continue
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                    default: break
                    }
                    index += 1
                } while depth > 0
            case nil:
                return nil
            default:
                while let byte = peek, !Self.isSpace(byte), byte != UInt8(ascii: ","), byte != UInt8(ascii: "}"),
                      byte != UInt8(ascii: "]") {
                    index += 1
                }
            }
            return start..<index
        }

        /// A member's name against the wanted one; a name written with escapes is
        /// compared as what it spells.
        static func matches(_ name: Slice<UnsafeBufferPointer<UInt8>>, _ wanted: [UInt8]) -> Bool {
            guard name.contains(UInt8(ascii: "\\")) else { return name.elementsEqual(wanted) }
            let quoted = Data([UInt8(ascii: "\"")] + Array(name) + [UInt8(ascii: "\"")])
            guard case .string(let decoded)? = try? JSONParser.parse(quoted) else { return false }
            return Array(decoded.utf8) == wanted
        }
    }
}
