import Foundation

/// Writes JSON as one line: no raw newline can appear, because control characters
/// inside strings are always escaped.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    /// Sorted keys give one canonical text per value (used to fingerprint requests).
    public var sortsKeys: Bool

    public init(sortsKeys: Bool = false, capacity: Int = 256) {
        self.sortsKeys = sortsKeys
        bytes.reserveCapacity(capacity)
    }

    public static func data(_ value: JSONValue, sortsKeys: Bool = false) -> Data {
        var writer = JSONWriter(sortsKeys: sortsKeys)
        writer.write(value)
        return Data(writer.bytes)
    }

    public mutating func write(_ value: JSONValue) {
        switch value {
        case .null: appendASCII("null")
        case .bool(let flag): appendASCII(flag ? "true" : "false")
        case .number(let number): write(number)
        case .string(let string): write(string)
        case .array(let elements):
            bytes.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(element)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            let members = sortsKeys ? object.members.sorted { $0.key < $1.key } : object.members
            for (index, member) in members.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                write(member.key)
                bytes.append(UInt8(ascii: ":"))
                write(member.value)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    public mutating func write(_ number: JSONNumber) {
        switch number {
        case .integer(let value): write(Int64(value))
        case .double(let value): write(value)
        }
    }

    /// Non-finite doubles have no JSON form; encoders refuse them before they get here,
    /// so `null` is only a last resort.
    public mutating func write(_ value: Double) {
        guard value.isFinite else { appendASCII("null"); return }
        if value.rounded() == value, abs(value) < 1e15 {
            write(Int64(value))
        } else if let decimal = Self.shortDecimal(value) {
            writeDecimal(decimal.scaled, places: decimal.places)
        } else {
            appendText(String(value))
        }
    }

    /// `value` as `scaled / 10^places` with the fewest places (1 to 7) that reads back as it,
    /// for magnitudes from 0.001 to 10^8 (coordinates, prices, ratings); nil when
    /// there is none or the value is outside. In that range a double's neighbours are
    /// nearer than 10^-7, so at most one decimal of those places reads back as it,
    /// and Swift's shortest form is that decimal without an exponent: it is written
    /// with integer arithmetic instead of the float printer (most of a search reply's
    /// numbers). `n / 10^p` of two exact doubles is rounded once, as reading the
    /// decimal is, so comparing it with `value` tells whether the decimal reads back.
    static func shortDecimal(_ value: Double) -> (scaled: Int64, places: Int)? {
        let magnitude = abs(value)
        guard magnitude >= 0.001, magnitude < 1e8 else { return nil }
        for places in 1...7 {
            let scale = JSONNumber.exactPowersOfTen[places]
            let scaled = (value * scale).rounded()
            if scaled / scale == value { return (Int64(scaled), places) }
        }
        return nil
    }

    /// Writes `hundredths / 100` as `write(Double)` would write that double (a
    /// distance rounded to centimetres), without formatting a `Double`: a double
    /// nearest to a decimal with two places prints as that decimal.
    public mutating func write(hundredths: Int64) {
        guard hundredths.magnitude < 1 << 50 else { return write(Double(hundredths) / 100) }
        writeDecimal(hundredths, places: 2)
    }

    /// Writes `scaled / 10^places` as a decimal, without trailing zeros.
    private mutating func writeDecimal(_ scaled: Int64, places: Int) {
        let unit = Int64(JSONNumber.exactPowersOfTen[places])
        let whole = scaled / unit
        let fraction = scaled.magnitude % UInt64(unit)
        if scaled < 0 && whole == 0 { bytes.append(UInt8(ascii: "-")) }
        write(whole)
        guard fraction != 0 else { return }
        bytes.append(UInt8(ascii: "."))
        var digits = places, rest = fraction
        while rest % 10 == 0 {
            rest /= 10
            digits -= 1
        }
        // The fraction's digits from the first place on, leading zeros included.
        var divisor = UInt64(unit) / 10
        for _ in 0..<digits {
            bytes.append(UInt8(ascii: "0") + UInt8(fraction / divisor % 10))
            divisor /= 10
        }
    }

    public mutating func write(_ value: Int64) {
        // Digits straight into the buffer: numbers are most of a search reply.
        guard value != .min else { appendText(String(value)); return }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 19 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[23 - count] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                count += 1
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(24 - count)...]))
        }
    }

    public mutating func write(_ string: String) {
        var string = string
        string.withUTF8 { writeString(utf8: $0) }
    }

    public mutating func write(_ strings: [String]) {
        bytes.append(UInt8(ascii: "["))
        for (index, string) in strings.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            write(string)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Whether UTF-8 text needs escapes inside a JSON string (a quote, a backslash or
    /// a control character): an index can ask once, when it stores the text, and
    /// then write it with `writeString(plainUTF8:)`.
    public static func needsEscaping(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
    }

    /// Writes UTF-8 bytes that `needsEscaping` found plain as a JSON string, as they are.
    public mutating func writeString(plainUTF8 utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: utf8)
        bytes.append(UInt8(ascii: "\""))
    }

    /// Writes UTF-8 bytes as a JSON string (a string kept as bytes in an index).
    public mutating func writeString(utf8: UnsafeBufferPointer<UInt8>) {
        // Most strings need no escape: copy them whole.
        guard Self.needsEscaping(utf8) else { return writeString(plainUTF8: utf8) }
        bytes.append(UInt8(ascii: "\""))
        for byte in utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case 0x0A: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case 0x00..<0x20:
                appendASCII("\\u00")
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0x0F)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Appends JSON that is already serialised (a stored reply, a pre-built hit).
    public mutating func writeRaw<Bytes: Sequence>(_ json: Bytes) where Bytes.Element == UInt8 {
        bytes.append(contentsOf: json)
    }

    /// Appends a JSON array of values that are already serialised.
    public mutating func writeRawArray(_ items: some Collection<[UInt8]>) {
        bytes.append(UInt8(ascii: "["))
        for (index, item) in items.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: item)
        }
        bytes.append(UInt8(ascii: "]"))
    }

    /// Drops what was written after `count` bytes (an entry that did not fit a page).
    public mutating func truncate(to count: Int) {
        bytes.removeSubrange(count...)
    }

    private mutating func appendText(_ text: String) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Appends a literal, copied from the binary with no `String` made.
    public mutating func appendASCII(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
