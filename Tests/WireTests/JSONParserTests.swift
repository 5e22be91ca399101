import Foundation
import Testing
@testable import Wire

@Suite("Strict JSON parsing")
struct JSONParserTests {
    private func parse(_ text: String) throws -> JSONValue { try JSONParser.parse(Data(text.utf8)) }

    @Test("reads every JSON type, keeping integer literals exact")
    func readsEveryType() throws {
        let value = try parse(#"{"a":null,"b":true,"c":false,"d":-12,"e":1.5,"f":"x\"y\u00e9\ud83d\ude00","g":[1,[2]],"h":{}}"#)
        guard case .object(let object) = value else { Issue.record("not an object"); return }
        #expect(object["a"] == .null)
        #expect(object["b"] == .bool(true))
        #expect(object["d"] == .number(.integer(-12)))
        #expect(object["e"] == .number(.double(1.5)))
        #expect(object["f"] == .string("x\"yé😀"))
        #expect(object["g"] == .array([.number(.integer(1)), .array([.number(.integer(2))])]))
        #expect(object.keys == ["a", "b", "c", "d", "e", "f", "g", "h"])
    }

    @Test("keeps Int64's extremes exact and turns larger integers into doubles")
    func integerExtremes() throws {
        #expect(try parse("9223372036854775807") == .number(.integer(.max)))
        #expect(try parse("-9223372036854775808") == .number(.integer(.min)))
        #expect(try parse("9223372036854775808") == .number(.double(9223372036854775808)))
        #expect(try parse("1e400") == .number(.double(.infinity)))
    }

    @Test("reads every decimal literal as the double strtod rounds it to, fast path or not")
    func decimalsRoundLikeStrtod() throws {
        var generator = SystemRandomNumberGenerator()
        var literals = ["0.0", "-0.0", "0e0", "1E+22", "1e23", "-1e-22", "1e-23", "9007199254740992.5", "9007199254740993e-3",
                        "0.1", "0.30000000000000004", "2.2250738585072014e-308", "1.7976931348623157e308", "4.9e-324",
                        "123456789012345678901234567890.5", "48.85341", "-179.99999999", "0.000000000000000000000001"]
        // 1-20 random digits (either side of 2^53) with the point anywhere among them,
        // and exponents either side of ±22.
        for _ in 0..<50_000 {
            let digits = (0..<Int.random(in: 1...20, using: &generator)).map { _ in Character(String(Int.random(in: 0...9, using: &generator))) }
            let point = Int.random(in: 1...digits.count, using: &generator)
            let integer = String(digits[..<point]).drop { $0 == "0" }
            var literal = (Bool.random(using: &generator) ? "-" : "") + (integer.isEmpty ? "0" : integer)
            if point < digits.count { literal += "." + String(digits[point...]) }
            if Bool.random(using: &generator) { literal += "e\(Int.random(in: -30...30, using: &generator))" }
            literals.append(literal)
        }
        for literal in literals {
            let expected = try #require(Double(literal))
            let parsed = try parse(literal)
            switch parsed {
            case .number(.double(let value)): #expect(value.bitPattern == expected.bitPattern, "\(literal)")
            case .number(.integer(let value)): #expect(Double(value) == expected, "\(literal)")
            default: Issue.record("\(literal) gave \(parsed)")
            }
        }
    }

    @Test("refuses what lenient parsers accept", arguments: [
        #"{"v":1,}"#, "[1,]", "{'v':1}", "{\"v\":01}", "{\"v\":1} x", "{\"v\":.5}", "{\"v\":1.}",
        "{\"v\":+1}", "{\"v\":NaN}", "{\"a\":1,\"a\":2}", "\"\\ud800\"", "\"\\udc00x\"", "\"tab\there\"",
        "\"\\x41\"", "// comment\n{}", "", "   ", "{", "[", "\"abc", "tru", "nul",
    ])
    func refusesInvalidJSON(text: String) {
        #expect(throws: JSONSyntaxError.self) { try parse(text) }
    }

    @Test("refuses invalid UTF-8 inside strings")
    func refusesInvalidUTF8() {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Data([0x22, 0xFF, 0xFE, 0x22])) }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(Data([0x22, 0x5C, 0x6E, 0xC3, 0x22])) }
    }

    @Test("refuses 10,000 levels of nesting without exhausting the stack")
    func refusesDeepNesting() {
        let arrays = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        #expect(throws: JSONSyntaxError.self) { try parse(arrays) }
        let objects = String(repeating: "{\"a\":", count: 10_000) + "1" + String(repeating: "}", count: 10_000)
        #expect(throws: JSONSyntaxError.self) { try parse(objects) }
        #expect(throws: Never.self) { try parse(String(repeating: "[", count: 64) + String(repeating: "]", count: 64)) }
    }

    @Test("finds a repeated key among many in linear time")
    func repeatedKeyAmongMany() {
        let members = (0..<20_000).map { "\"k\($0)\":1" }.joined(separator: ",")
        #expect(throws: JSONSyntaxError.self) { try parse("{" + members + ",\"k5\":2}") }
        #expect(throws: Never.self) { try parse("{" + members + "}") }
    }
}

@Suite("One-line JSON writing")
struct JSONWriterTests {
    @Test("escapes control characters so no raw newline is ever written")
    func escapesControlCharacters() throws {
        let text = String(decoding: JSONWriter.data(.string("a\nb\r\t\u{1}\"\\é")), as: UTF8.self)
        #expect(text == #""a\nb\r\t\u0001\"\\é""#)
        #expect(try JSONParser.parse(Data(text.utf8)) == .string("a\nb\r\t\u{1}\"\\é"))
    }

    @Test("writes whole doubles without a fraction and others in shortest form")
    func writesNumbers() {
        #expect(String(decoding: JSONWriter.data(.number(.double(5))), as: UTF8.self) == "5")
        #expect(String(decoding: JSONWriter.data(.number(.double(12.5))), as: UTF8.self) == "12.5")
        #expect(String(decoding: JSONWriter.data(.number(.double(52.370216))), as: UTF8.self) == "52.370216")
    }

    @Test("doubles with few decimal places are written exactly as Swift's shortest form, without its printer")
    func writesShortDecimals() {
        var random = SystemRandomNumberGenerator()
        var samples: [Double] = [0.001, 0.00099, 0.0001, -0.001, 0.1, 0.7, 1.5, -0.5, 52.0907, -179.9999999, 99_999_999.9999999,
                                 99_999_999.5, 1e8 + 0.5, 0.30000000000000004, 1.0000001, 1.00000001, .leastNonzeroMagnitude, 123.4567891]
        for _ in 0..<50_000 {
            // Decimals of 0 to 9 places at many magnitudes, as clients send them.
            let places = Int.random(in: 0...9, using: &random)
            let digits = Int64.random(in: -(Int64(1) << Int.random(in: 1...53, using: &random))...(Int64(1) << 40), using: &random)
            samples.append(Double("\(digits)e-\(places)")!)
            samples.append(Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &random)))
            samples.append(Double.random(in: -200...200, using: &random))
        }
        for value in samples where value.isFinite && value.rounded() != value {
            var writer = JSONWriter()
            writer.write(value)
            #expect(String(decoding: writer.bytes, as: UTF8.self) == String(value), "\(value)")
        }
    }

    @Test("hundredths are written as the double they stand for would be")
    func writesHundredths() {
        func text(_ write: (inout JSONWriter) -> Void) -> String {
            var writer = JSONWriter()
            write(&writer)
            return String(decoding: writer.bytes, as: UTF8.self)
        }
        var random = SystemRandomNumberGenerator()
        let samples: [Int64] = [0, 1, 5, 10, 99, 100, 101, 150, 12_345, -5, -150, -12_345, 2_003_974_853, 1 << 50, -(1 << 52) - 7]
            + (0..<20_000).map { _ in Int64.random(in: 0...4_003_000_000, using: &random) }
        for n in samples {
            #expect(text { $0.write(hundredths: n) } == text { $0.write(Double(n) / 100) }, "\(n)")
        }
        #expect(text { $0.write(hundredths: 1_234_507) } == "12345.07")
    }

    @Test("plain strings are told apart from those that need escapes")
    func plainStrings() {
        func needsEscaping(_ text: String) -> Bool { Array(text.utf8).withUnsafeBufferPointer(JSONWriter.needsEscaping) }
        #expect(!needsEscaping("Café Zürich — 東京"))
        for special in ["a\"b", "a\\b", "a\nb", "\u{1F}"] { #expect(needsEscaping(special), "\(special)") }
    }

    @Test("sorted keys give one text for equal objects")
    func sortedKeys() {
        let a = JSONValue.object(JSONObject([("b", .number(.integer(1))), ("a", .null)]))
        let b = JSONValue.object(JSONObject([("a", .null), ("b", .number(.integer(1)))]))
        #expect(JSONWriter.data(a, sortsKeys: true) == JSONWriter.data(b, sortsKeys: true))
        #expect(a == b)
    }
}
