import Foundation
import Testing
import Wire

@Suite("Base64url")
struct Base64URLTests {
    /// What RFC 4648 §5 without padding gives, by way of Foundation's base64.
    private func reference(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    @Test("encodes as RFC 4648 §5 without padding, and decodes back, for every length and byte")
    func roundTrip() throws {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            for _ in 0..<20 {
                let data = Data((0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) })
                let text = Base64URL.encode(data)
                #expect(text == reference(data))
                #expect(Base64URL.decode(text) == data)
            }
        }
        #expect(Base64URL.encode(Data([0xFB, 0xFF])) == "-_8")
        #expect(Base64URL.encode(Data("hello".utf8)) == "aGVsbG8")
    }

    @Test("refuses padding, the plain alphabet's + and /, impossible lengths and stray bits")
    func refusals() {
        for text in ["aGVsbG8=", "+_8", "/_8", "a", "aGVsb", "aGVsbG9", "a b", "é"] {
            #expect(Base64URL.decode(text) == nil, "\(text)")
        }
        #expect(Base64URL.decode("") == Data())
    }
}
