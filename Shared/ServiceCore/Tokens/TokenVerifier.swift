import Contracts
import Crypto
import Foundation
import JWTKit
import Synchronization
import Wire

/// Verifies access tokens locally with auth's public keys, so authorizing a request
/// costs no round trip to auth.
///
/// Verified tokens are kept (by their SHA-256) until they expire: an Ed25519 check
/// costs about 60 µs, a lookup far less.
public final class TokenVerifier: Sendable {
    /// Where the public keys come from.
    public enum KeySource: Sendable {
        /// Keys known up front: auth's own, or keys given in configuration.
        case fixed([PublicKeyJWK])
        /// Keys fetched with `auth.publicKey`, again when a token names an unknown kid
        /// (at most once per `refetchInterval`).
        case fetched(@Sendable () throws -> [PublicKeyJWK])
    }

    public static let maxCachedTokens = 10_000
    public static let refetchInterval: TimeInterval = 5
    /// Tolerated clock difference for a token's issue time.
    public static let clockSkew: TimeInterval = 60

    private let source: KeySource
    private let keys = Mutex<[String: Curve25519.Signing.PublicKey]>([:])
    /// When keys were last fetched; locked for the length of a fetch.
    private let lastFetch = Mutex<Date?>(nil)
    private let verified = Mutex<[Data: Caller]>([:])

    public init(source: KeySource) throws {
        self.source = source
        if case .fixed(let jwks) = source {
            try install(jwks)
        }
    }

    /// Thrown instead of fetching keys when the caller may not wait for IO.
    public struct KeysNotLoaded: Error {}

    /// The caller a token proves, or `unauthenticated` saying why not.
    ///
    /// - Parameter mayFetch: whether an unknown kid may trigger a fetch from auth;
    ///   when false, such a token throws `KeysNotLoaded` (the caller retries where
    ///   waiting is allowed).
    public func verify(_ token: String, now: Date = Date(), mayFetch: Bool = true) throws -> Caller {
        let digest = Data(SHA256.hash(data: Data(token.utf8)))
        if let caller = verified.withLock({ $0[digest] }) {
            guard caller.expiresAt > now else { throw ServiceError.unauthenticated("the access token has expired") }
            return caller
        }
        let caller = try verifyUncached(token, now: now, mayFetch: mayFetch)
        verified.withLock { cache in
            if cache.count >= Self.maxCachedTokens {
                cache = cache.filter { $0.value.expiresAt > now }
                if cache.count >= Self.maxCachedTokens { cache.removeAll(keepingCapacity: true) }
            }
            cache[digest] = caller
        }
        return caller
    }

    private func verifyUncached(_ token: String, now: Date, mayFetch: Bool) throws -> Caller {
        let bytes = Array(token.utf8)
        let parsed: (header: JWTHeader, payload: AccessClaims, signature: Data)
        do {
            parsed = try DefaultJWTParser().parse(bytes, as: AccessClaims.self)
        } catch {
            throw ServiceError.unauthenticated("the access token is malformed")
        }
        guard parsed.header.alg == "EdDSA" else {
            throw ServiceError.unauthenticated("the access token is not signed with EdDSA")
        }
        guard let kid = parsed.header.kid, let key = try key(for: kid, mayFetch: mayFetch) else {
            throw ServiceError.unauthenticated("the access token is signed with an unknown key")
        }
        // The signature covers the token up to its last period (header.payload).
        guard let lastPeriod = bytes.lastIndex(of: UInt8(ascii: ".")),
              key.isValidSignature(parsed.signature, for: bytes[..<lastPeriod]) else {
            throw ServiceError.unauthenticated("the access token's signature is invalid")
        }
        let claims = parsed.payload
        guard claims.exp.value > now else { throw ServiceError.unauthenticated("the access token has expired") }
        guard claims.iat.value <= now.addingTimeInterval(Self.clockSkew) else {
            throw ServiceError.unauthenticated("the access token is issued in the future")
        }
        guard Identifier.isValidEntityID(claims.sub.value) else {
            throw ServiceError.unauthenticated("the access token is malformed")
        }
        return Caller(userID: claims.sub.value, sessionID: claims.sid, anonymous: claims.anon, expiresAt: claims.exp.value)
    }

    private func key(for kid: String, mayFetch: Bool) throws -> Curve25519.Signing.PublicKey? {
        if let key = keys.withLock({ $0[kid] }) { return key }
        guard case .fetched(let fetch) = source else { return nil }
        guard mayFetch else { throw KeysNotLoaded() }
        // One fetch at a time, held while it runs: a request that arrives during
        // another's fetch waits for its keys instead of being refused for a kid the
        // fetch is about to bring.
        return try lastFetch.withLock { last throws -> Curve25519.Signing.PublicKey? in
            if let key = keys.withLock({ $0[kid] }) { return key }
            if let last, Date().timeIntervalSince(last) < Self.refetchInterval { return nil }
            last = Date()
            try install(try fetch())
            return keys.withLock { $0[kid] }
        }
    }

    private func install(_ jwks: [PublicKeyJWK]) throws {
        var parsed: [String: Curve25519.Signing.PublicKey] = [:]
        for jwk in jwks where jwk.alg == "EdDSA" {
            guard let raw = Base64URL.decode(jwk.x),
                  let key = try? Curve25519.Signing.PublicKey(rawRepresentation: raw) else {
                throw ServiceError(code: .internal, message: "auth public key \(jwk.kid) is not an Ed25519 key")
            }
            parsed[jwk.kid] = key
        }
        keys.withLock { $0.merge(parsed) { $1 } }
    }
}
