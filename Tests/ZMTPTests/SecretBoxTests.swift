import Foundation
import Testing
@testable import ZMTP

@Suite("NaCl's box (X25519, XSalsa20, Poly1305) as CurveZMQ seals with it")
struct SecretBoxTests {
    private static func hex(_ text: String) -> [UInt8] {
        var bytes: [UInt8] = []
        var index = text.startIndex
        while index < text.endIndex {
            let next = text.index(index, offsetBy: 2)
            bytes.append(UInt8(text[index..<next], radix: 16)!)
            index = next
        }
        return bytes
    }

    /// Made with PyPI's PyNaCl (`crypto_box(message, nonce, pk2, sk1)` and
    /// `crypto_box_beforenm(pk2, sk1)`): libsodium too, through NaCl's classic calls, so
    /// what they check is `SecretBox`'s use of it (the key, the tag before the
    /// ciphertext, the nonce), as the CURVE test checks it against libzmq's server.
    static let secretKey1 = [UInt8](1...32)
    static let publicKey2 = hex("5714769d116bf76436ae74bc793d2c30ad1903c59ac5273805c7e2698b410c36")
    static let nonce = [UInt8](200..<224)
    static let message = (0..<200).map { UInt8(($0 * 7 + 3) % 256) }
    static let sharedKey = hex("72da8bbbf5a0760cea2a1d1f2c5f19d54f292f8e7a1dd292b7a86a567ceabc69")
    static let sealed = hex("""
        fd13927b1ebde2074f283931976e9a25c5b0234df19f36e608fb6b73b450187f0186262228a44b59c517020d0aaf66eccb283e041b31f9c5\
        8592b903ae47591914af6c0c3ea7d8933206aca616ef50877ad1d41587969fd7f1ea39d9a5a13c1fcb13f5100d690183fda2e194d78bc378\
        52302df91d01ee5402b4c2e03c8f8ee5aa34086810df364e8b1a8af9f0c1ff9d43d2927453a3f39b104ddf8c68fd9eaff13293a80522e44d\
        d385518d6da44e1f028cd89ceb9a4357372c08241d02b6b44a54ebd5bbad6e82002b7db7b0306e347e64461c32fc9b98
        """)

    @Test("the shared key, a sealed box and its opening equal libsodium's; a changed byte is refused")
    func knownAnswers() throws {
        let box = try SecretBox(publicKey: Self.publicKey2, secretKey: Self.secretKey1)
        #expect(box.key == Self.sharedKey)
        #expect(box.seal(Self.message, nonce: Self.nonce) == Self.sealed)
        #expect(box.open(Self.sealed, nonce: Self.nonce) == Self.message)
        var forged = Self.sealed
        forged[100] ^= 1
        #expect(box.open(forged, nonce: Self.nonce) == nil)
        #expect(box.open(Self.sealed.prefix(15), nonce: Self.nonce) == nil)
    }
}
