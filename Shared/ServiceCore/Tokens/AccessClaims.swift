import Foundation
import JWTKit

/// The claims of a Hereabouts access token (a JWT signed by auth with EdDSA).
public struct AccessClaims: JWTPayload, Equatable {
    /// The user id.
    public var sub: SubjectClaim
    public var exp: ExpirationClaim
    public var iat: IssuedAtClaim
    /// The session (refresh-token family) the token was issued in.
    public var sid: String
    /// Whether the user is anonymous.
    public var anon: Bool

    public init(userID: String, sessionID: String, anonymous: Bool, issuedAt: Date, lifetime: TimeInterval) {
        sub = SubjectClaim(value: userID)
        iat = IssuedAtClaim(value: issuedAt)
        exp = ExpirationClaim(value: issuedAt.addingTimeInterval(lifetime))
        sid = sessionID
        anon = anonymous
    }

    public func verify(using algorithm: some JWTAlgorithm) throws {
        try exp.verifyNotExpired()
    }
}

/// Who sent a request, read from a verified access token.
public struct Caller: Sendable, Equatable {
    public let userID: String
    public let sessionID: String
    public let anonymous: Bool
    public let expiresAt: Date

    public init(userID: String, sessionID: String, anonymous: Bool, expiresAt: Date) {
        self.userID = userID
        self.sessionID = sessionID
        self.anonymous = anonymous
        self.expiresAt = expiresAt
    }
}
