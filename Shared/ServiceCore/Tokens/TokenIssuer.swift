import Contracts
import Crypto
import Foundation
import JWTKit
import Wire

/// Signs access tokens: JWTs with jwt-kit's header and claims, EdDSA over Ed25519,
/// valid for 15 minutes, naming the signing key by `kid`.
///
/// Signing is synchronous (jwt-kit's key collection is an async actor, which a
/// handler on a service thread could only wait for by blocking). Auth signs with
/// it; it lives beside the verifier so that tests can make a token as auth would
/// (one about to expire, say) from auth's key.
public final class TokenIssuer: Sendable {
    public static let lifetime: TimeInterval = 15 * 60

    public let kid: String
    public let publicKey: PublicKeyJWK
    private let privateKey: Curve25519.Signing.PrivateKey
    private let encodedHeader: String

    public init(kid: String, privateKey raw: Data) throws {
        let privateKey = try Curve25519.Signing.PrivateKey(rawRepresentation: raw)
        self.kid = kid
        self.privateKey = privateKey
        self.publicKey = PublicKeyJWK(kid: kid, x: Base64URL.encode(privateKey.publicKey.rawRepresentation))
        var header = JWTHeader()
        header.alg = "EdDSA"
        header.typ = "JWT"
        header.kid = kid
        self.encodedHeader = Base64URL.encode(try DefaultJWTSerializer().jsonEncoder.encode(header))
    }

    public func accessToken(userID: String, sessionID: String, anonymous: Bool, now: Date,
                            lifetime: TimeInterval = TokenIssuer.lifetime) throws -> String {
        let claims = AccessClaims(userID: userID, sessionID: sessionID, anonymous: anonymous,
                                  issuedAt: now, lifetime: lifetime)
        let payload = try DefaultJWTSerializer().serialize(claims)
        let signingInput = encodedHeader + "." + String(decoding: payload, as: UTF8.self)
        let signature = try privateKey.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}
