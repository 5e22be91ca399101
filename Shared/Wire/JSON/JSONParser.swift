import Foundation

/// Why a document is not acceptable JSON, and where.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Byte offset into the document.
    public let offset: Int
    public let reason: String

    public var description: String { "\(reason) at byte \(offset)" }
}

/// A strict RFC 8259 parser.
///
/// Strict where lenient parsers are not: no trailing commas, no comments, no
/// repeated keys, valid UTF-8 only, no unpaired surrogate escapes, and a bound on
/// nesting so a hostile document cannot exhaust the stack.
public enum JSONParser {
    /// Deeper documents are refused; no message of the protocol nests past a handful.
    public static let maxDepth = 64

    public static func parse(_ data: Data) throws -> JSONValue {
        try data.withUnsafeBytes { raw in try parse(raw.bindMemory(to: UInt8.self)) }
    }

    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        try bytes.withUnsafeBufferPointer { buffer in try parse(buffer) }
    }

    /// The document in `bytes`, read in place (a member's bytes within a larger text).
    static func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws -> JSONValue {
        var parser = Parser(bytes: bytes)
        return try parser.parseDocument()
    }
}

private struct Parser {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    mutating func parseDocument() throws -> JSONValue {
        skipWhitespace()
        let value = try parseValue(depth: 1)
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON value") }
        return value
    }

    private func fail(_ reason: String, at offset: Int? = nil) -> JSONSyntaxError {
        JSONSyntaxError(offset: offset ?? index, reason: reason)
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws -> JSONValue {
        guard index < bytes.count else { throw fail("unexpected end of JSON") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth)
        case UInt8(ascii: "["): return try parseArray(depth: depth)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return .number(try parseNumber())
        default: throw fail("unexpected character")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw fail("unexpected end of JSON") }
        for offset in 0..<count where bytes[index + offset] != literal.utf8Start[offset] {
            throw fail("unexpected character")
        }
        index += count
    }

    private mutating func parseObject(depth: Int) throws -> JSONValue {
        guard depth <= JSONParser.maxDepth else { throw fail("JSON nested deeper than \(JSONParser.maxDepth) levels") }
        index += 1
        var members: [(key: String, value: JSONValue)] = []
        // Small objects are checked for repeated keys by scanning; large ones by a set,
        // so a hostile object with many keys costs linear time.
        var seen: Set<String>? = nil
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(JSONObject(members))
        }
        // Room for a request's envelope or body at once, instead of growing 1, 2, 4, 8.
        members.reserveCapacity(8)
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON") }
            guard bytes[index] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let keyOffset = index
            let key = try parseString()
            if members.count == 16 { seen = Set(members.map(\.key)) }
            if seen != nil {
                guard seen!.insert(key).inserted else { throw fail("repeated key \"\(key)\"", at: keyOffset) }
            } else if members.contains(where: { $0.key == key }) {
                throw fail("repeated key \"\(key)\"", at: keyOffset)
            }
            skipWhitespace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth + 1)
            members.append((key, value))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"): index += 1; return .object(JSONObject(members))
            default: throw fail("expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray(depth: Int) throws -> JSONValue {
        guard depth <= JSONParser.maxDepth else { throw fail("JSON nested deeper than \(JSONParser.maxDepth) levels") }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth + 1))
            skipWhitespace()
            guard index < bytes.count else { throw fail("unexpected end of JSON") }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw fail("expected ',' or ']'")
            }
        }
    }

    private mutating func parseString() throws -> String {
        let start = index
        index += 1
        let contentStart = index
        // Fast path: no escapes, so the bytes between the quotes are the string.
        var isASCII = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let content = UnsafeBufferPointer(rebasing: bytes[contentStart..<index])
                index += 1
                // ASCII is valid UTF-8 as it is; `String(validating:)` is generic
                // and looks up type metadata on every call (a few % of a search).
                if isASCII { return String(decoding: content, as: UTF8.self) }
                guard let string = String(validating: content, as: UTF8.self) else {
                    throw fail("invalid UTF-8 in a string", at: start)
                }
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("control character in a string") }
            if byte >= 0x80 { isASCII = false }
            index += 1
        }
        guard index < bytes.count else { throw fail("unterminated string", at: start) }
        return try parseEscapedString(start: start, contentStart: contentStart)
    }

    private mutating func parseEscapedString(start: Int, contentStart: Int) throws -> String {
        var buffer = Array(bytes[contentStart..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let string = String(validating: buffer, as: UTF8.self) else {
                    throw fail("invalid UTF-8 in a string", at: start)
                }
                return string
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { throw fail("unterminated string", at: start) }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): buffer.append(0x22)
                case UInt8(ascii: "\\"): buffer.append(0x5C)
                case UInt8(ascii: "/"): buffer.append(0x2F)
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                case UInt8(ascii: "u"): appendUTF8(try parseUnicodeEscape(), to: &buffer)
                default: throw fail("invalid escape in a string", at: index - 2)
                }
            default:
                if byte < 0x20 { throw fail("control character in a string") }
                buffer.append(byte)
                index += 1
            }
        }
        throw fail("unterminated string", at: start)
    }

    /// Reads the hex digits after `\u`, joining a surrogate pair into one scalar.
    private mutating func parseUnicodeEscape() throws -> Unicode.Scalar {
        let offset = index - 2
        let first = try parseHex4()
        switch first {
        case 0xD800...0xDBFF:
            guard index + 6 <= bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                throw fail("unpaired surrogate in a string", at: offset)
            }
            index += 2
            let second = try parseHex4()
            guard (0xDC00...0xDFFF).contains(second) else { throw fail("unpaired surrogate in a string", at: offset) }
            let value = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
            return Unicode.Scalar(value)!
        case 0xDC00...0xDFFF:
            throw fail("unpaired surrogate in a string", at: offset)
        default:
            return Unicode.Scalar(first)!
        }
    }

    private mutating func parseHex4() throws -> UInt32 {
        guard index + 4 <= bytes.count else { throw fail("unterminated string") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw fail("invalid \\u escape")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    private func appendUTF8(_ scalar: Unicode.Scalar, to buffer: inout [UInt8]) {
        UTF8.encode(scalar) { buffer.append($0) }
    }

    private mutating func parseNumber() throws -> JSONNumber {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number", at: start) }
        var integer: Int64 = 0
        var overflow = false
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, isDigit(bytes[index]) { throw fail("leading zero in a number", at: start) }
        } else {
            while index < bytes.count, isDigit(bytes[index]) {
                let digit = Int64(bytes[index] - UInt8(ascii: "0"))
                // Accumulate negatively so Int64.min is reachable.
                let (times10, o1) = integer.multipliedReportingOverflow(by: 10)
                let (next, o2) = times10.subtractingReportingOverflow(digit)
                overflow = overflow || o1 || o2
                integer = next
                index += 1
            }
        }
        var isInteger = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number", at: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw fail("invalid number", at: start) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if isInteger && !overflow {
            if negative { return .integer(integer) }
            let (positive, o) = (0 as Int64).subtractingReportingOverflow(integer)
            if !o { return .integer(positive) }
        }
        let literal = UnsafeBufferPointer(rebasing: bytes[start..<index])
        if let value = Self.exactDouble(literal) { return .double(value) }
        // The grammar was checked above, so this only rounds; an overflow gives ±infinity.
        return .double(Double(String(decoding: literal, as: UTF8.self)) ?? (negative ? -.infinity : .infinity))
    }

    /// The value of a number literal (grammar already checked) whose digits, as one
    /// integer, are at most 2^53 and whose decimal exponent is within ±22, such as
    /// every coordinate and radius a client sends: both are then exact doubles, and
    /// the one multiplication or division between them is correctly rounded
    /// (Clinger's fast path), so no String is made for `strtod`. Nil otherwise.
    static func exactDouble(_ literal: UnsafeBufferPointer<UInt8>) -> Double? {
        var index = 0
        let negative = literal[0] == UInt8(ascii: "-")
        if negative { index = 1 }
        var digits: UInt64 = 0
        var exponent = 0
        var inFraction = false
        while index < literal.count {
            let byte = literal[index]
            if byte == UInt8(ascii: ".") {
                inFraction = true
            } else if byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") {
                digits = digits &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
                guard digits <= 1 << 53 else { return nil }
                if inFraction { exponent -= 1 }
            } else {
                break  // "e" or "E"
            }
            index += 1
        }
        if index < literal.count {
            index += 1
            var exponentNegative = false
            if literal[index] == UInt8(ascii: "+") || literal[index] == UInt8(ascii: "-") {
                exponentNegative = literal[index] == UInt8(ascii: "-")
                index += 1
            }
            var written = 0
            while index < literal.count {
                written = written * 10 + Int(literal[index] - UInt8(ascii: "0"))
                guard written <= 1_000 else { return nil }
                index += 1
            }
            exponent += exponentNegative ? -written : written
        }
        guard exponent.magnitude < JSONNumber.exactPowersOfTen.count else { return nil }
        let power = JSONNumber.exactPowersOfTen[Int(exponent.magnitude)]
        let magnitude = exponent >= 0 ? Double(digits) * power : Double(digits) / power
        return negative ? -magnitude : magnitude
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
