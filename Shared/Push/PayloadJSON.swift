import Foundation

/// A push's JSON payload, written directly: the payloads are small objects of strings and
/// numbers, and Foundation's `JSONSerialization` (a dictionary of `Any`, cast back member by
/// member) took about half of the push sender's own time per push.
struct PayloadJSON {
    private(set) var bytes: [UInt8] = []
    /// For each open object, whether no member has been written in it yet.
    private var empty: [Bool] = []

    init() {
        bytes.reserveCapacity(384)
    }

    var data: Data { Data(bytes) }

    /// An object: the payload itself, or the value of the `key` just written.
    mutating func openObject() {
        bytes.append(UInt8(ascii: "{"))
        empty.append(true)
    }

    mutating func closeObject() {
        bytes.append(UInt8(ascii: "}"))
        empty.removeLast()
    }

    /// A member's name; its value is written next.
    mutating func key(_ name: String) {
        if empty.last == false { bytes.append(UInt8(ascii: ",")) }
        if !empty.isEmpty { empty[empty.count - 1] = false }
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    mutating func member(_ name: String, _ value: String) {
        key(name)
        string(value)
    }

    mutating func member(_ name: String, _ value: Int) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    /// Members of `values`, by name (so a payload is the same bytes each time).
    mutating func members(_ values: [String: String], except excluded: Set<String> = []) {
        for (name, value) in values.sorted(by: { $0.key < $1.key }) where !excluded.contains(name) {
            member(name, value)
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// RFC 8259: quotes, backslashes and control characters escaped; the rest as UTF-8.
    private mutating func string(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), byte])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
