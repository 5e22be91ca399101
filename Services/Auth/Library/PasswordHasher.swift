import CSodium
import Foundation
import Wire

/// The cost of scrypt: N = 2^logN, block size r, parallelism p.
struct ScryptParameters: Sendable, Equatable {
    var logN: Int
    var r: Int
    var p: Int

    /// What new hashes use: N = 2^17, r = 8, p = 1 (128 MiB and about a third of a
    /// second per hash on this machine class).
    static let standard = ScryptParameters(logN: 17, r: 8, p: 1)

    /// Stored hashes outside these bounds are refused rather than computed.
    fileprivate var isPlausible: Bool {
        (1...22).contains(logN) && (1...32).contains(r) && (1...16).contains(p)
    }
}

/// Hashes and checks passwords with scrypt, stored in a self-describing form:
/// `$scrypt$ln=17,r=8,p=1$<salt>$<hash>` (base64url), so a hash made with other
/// parameters still verifies after the standard changes.
struct PasswordHasher: Sendable {
    let parameters: ScryptParameters
    private static let saltBytes = 16
    private static let hashBytes = 32

    init(parameters: ScryptParameters = .standard) {
        self.parameters = parameters
    }

    func hash(_ password: String) throws -> String {
        let salt = Self.randomBytes(Self.saltBytes)
        return Self.stored(parameters, salt: salt, digest: try Self.derive(password, salt: Data(salt), parameters: parameters))
    }

    /// A stored-hash value that no password matches but that costs as much to check
    /// as a real one: compared against when a login names no account, so a failed
    /// login takes as long either way.
    func decoy() -> String {
        Self.stored(parameters, salt: Self.randomBytes(Self.saltBytes), digest: Self.randomBytes(Self.hashBytes))
    }

    /// The stored form `verify` reads.
    static func stored(_ parameters: ScryptParameters, salt: some DataProtocol, digest: some DataProtocol) -> String {
        "$scrypt$ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)$\(Base64URL.encode(salt))$\(Base64URL.encode(digest))"
    }

    private static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    /// Whether `password` matches `stored`; false for a stored value this hasher
    /// cannot read.
    func verify(_ password: String, against stored: String) -> Bool {
        guard let stored = Stored(stored),
              let derived = try? Self.derive(password, salt: stored.salt, parameters: stored.parameters,
                                             outputBytes: stored.digest.count)
        else { return false }
        return Self.constantTimeEqual(derived, stored.digest)
    }

    /// Whether `stored`, a hash this hasher reads, was made with other parameters than
    /// the ones it makes hashes with now: a login that verified it stores a new one, so
    /// a change of cost reaches every account as it signs in.
    func needsRehash(_ stored: String) -> Bool {
        guard let stored = Stored(stored) else { return false }
        return stored.parameters != parameters
    }

    /// The parts of a stored hash, when they are ones `verify` can use.
    private struct Stored {
        let parameters: ScryptParameters
        let salt: Data
        let digest: Data

        init?(_ text: String) {
            let parts = text.split(separator: "$", omittingEmptySubsequences: false)
            guard parts.count == 5, parts[0].isEmpty, parts[1] == "scrypt",
                  let parameters = PasswordHasher.parameters(String(parts[2])), parameters.isPlausible,
                  let salt = Base64URL.decode(String(parts[3])), let digest = Base64URL.decode(String(parts[4])),
                  digest.count >= 16 // an empty or short digest would match too much
            else { return nil }
            (self.parameters, self.salt, self.digest) = (parameters, salt, digest)
        }
    }

    /// libsodium picks its implementations once, before the first use.
    private static let sodiumReady: Bool = sodium_init() >= 0

    /// scrypt (RFC 7914) by libsodium's `crypto_pwhash_scryptsalsa208sha256_ll`, which
    /// takes N, r and p as they are. libsodium is the system's library, built optimised,
    /// so debug builds (the tests' services) hash as fast as release ones: BoringSSL's
    /// scrypt, which this replaced, is compiled at -O0 in a debug build and took 1.8-2.3 s
    /// a hash there against 0.35-0.38 s. Both give the same bytes (RFC 7914's vectors;
    /// `PasswordHasherTests`), so hashes stored before still verify.
    static func derive(_ password: String, salt: Data, parameters: ScryptParameters,
                       outputBytes: Int = hashBytes) throws -> Data {
        guard sodiumReady else { throw PasswordHashFailure(description: "libsodium could not start") }
        // The same password typed on different keyboards can differ in composition.
        let normalized = Array(password.precomposedStringWithCanonicalMapping.utf8)
        let salt = Array(salt)
        var derived = [UInt8](repeating: 0, count: outputBytes)
        // Fails only for parameters libsodium refuses (N not a power of two above 1,
        // r * p of 2^30 or more) or memory it cannot have.
        let status = crypto_pwhash_scryptsalsa208sha256_ll(
            normalized, normalized.count, salt, salt.count, UInt64(1) << UInt64(parameters.logN),
            UInt32(parameters.r), UInt32(parameters.p), &derived, derived.count)
        guard status == 0 else {
            throw PasswordHashFailure(description: "scrypt refused ln=\(parameters.logN),r=\(parameters.r),p=\(parameters.p)")
        }
        return Data(derived)
    }

    private static func parameters(_ text: String) -> ScryptParameters? {
        var values: [String: Int] = [:]
        for pair in text.split(separator: ",") {
            let keyValue = pair.split(separator: "=")
            guard keyValue.count == 2, let value = Int(keyValue[1]) else { return nil }
            values[String(keyValue[0])] = value
        }
        guard let logN = values["ln"], let r = values["r"], let p = values["p"] else { return nil }
        return ScryptParameters(logN: logN, r: r, p: p)
    }

    private static func constantTimeEqual(_ a: Data, _ b: Data) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

/// scrypt could not run: libsodium did not start, or refused the parameters or memory.
struct PasswordHashFailure: Error, CustomStringConvertible {
    let description: String
}
