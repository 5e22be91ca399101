import Foundation
import Testing
import Wire
import _CryptoExtras
@testable import Auth

/// The password hash is scrypt by libsodium; the stored hashes of accounts made before
/// were BoringSSL's (swift-crypto's `KDF.Scrypt`). Both must be RFC 7914's function to
/// the byte, or every existing user is locked out.
@Suite("Password hashes: scrypt as RFC 7914 gives it")
struct PasswordHasherTests {
    /// RFC 7914, section 12: (password, salt, logN, r, p, derived key).
    static let vectors: [(String, String, Int, Int, Int, String)] = [
        ("", "", 4, 1, 1,
         "77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906"),
        ("password", "NaCl", 10, 8, 16,
         "fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b3731622eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640"),
    ]

    @Test("RFC 7914's test vectors")
    func rfcVectors() throws {
        for (password, salt, logN, r, p, hex) in Self.vectors {
            let derived = try PasswordHasher.derive(password, salt: Data(salt.utf8),
                                                    parameters: ScryptParameters(logN: logN, r: r, p: p), outputBytes: 64)
            #expect(derived.map { String(format: "%02x", $0) }.joined() == hex, "\(password)/\(salt)")
        }
    }

    @Test("A hash stored by BoringSSL's scrypt verifies, and one made now verifies with it")
    func sameAsBoringSSL() throws {
        let parameters = ScryptParameters(logN: 12, r: 8, p: 1)
        let hasher = PasswordHasher(parameters: parameters)
        let salt = Data((0..<16).map { UInt8($0 * 7 + 3) })
        // "é" precomposed, as the hasher normalises what it is given.
        let password = "caf\u{e9} au lait"
        let before = try KDF.Scrypt.deriveKey(from: Data(password.utf8), salt: salt, outputByteCount: 32,
                                              rounds: 1 << parameters.logN, blockSize: parameters.r,
                                              parallelism: parameters.p)
        let stored = PasswordHasher.stored(parameters, salt: salt, digest: before.withUnsafeBytes { Data($0) })
        #expect(hasher.verify(password, against: stored))
        #expect(hasher.verify("cafe\u{301} au lait", against: stored), "a decomposed é is the same password")
        #expect(!hasher.verify("cafe au lait", against: stored))

        let made = try hasher.hash(password)
        let parts = made.split(separator: "$", omittingEmptySubsequences: false)
        #expect(parts.count == 5 && parts[2] == "ln=12,r=8,p=1", "\(made)")
        let madeSalt = try #require(Base64URL.decode(String(parts[3])))
        let madeDigest = try #require(Base64URL.decode(String(parts[4])))
        let boring = try KDF.Scrypt.deriveKey(from: Data(password.utf8), salt: madeSalt, outputByteCount: madeDigest.count,
                                              rounds: 1 << 12, blockSize: 8, parallelism: 1)
        #expect(boring.withUnsafeBytes { Data($0) } == madeDigest)
    }

    @Test("Stored values it cannot use match no password")
    func unusableStoredValues() throws {
        let hasher = PasswordHasher(parameters: ScryptParameters(logN: 10, r: 8, p: 1))
        let good = try hasher.hash("secret")
        #expect(hasher.verify("secret", against: good))
        let parts = good.split(separator: "$", omittingEmptySubsequences: false).map(String.init)
        func with(_ index: Int, _ value: String) -> String {
            var changed = parts
            changed[index] = value
            return changed.joined(separator: "$")
        }
        for stored in [with(4, ""), with(4, "AAAA"), with(2, "ln=40,r=8,p=1"), with(2, "ln=10,r=8"),
                       with(1, "bcrypt"), with(3, "not base64!"), "", "$scrypt$", hasher.decoy()] {
            #expect(!hasher.verify("secret", against: stored), "\(stored)")
        }
    }
}
