import Wire

/// The auth service's ops.
public enum AuthAPI {
    public static let service = "auth"

    public static let register = Op<RegisterRequest, SessionReply>("auth.register", access: .anyone, effect: .sessionWrite)
    public static let login = Op<LoginRequest, SessionReply>("auth.login", access: .anyone, effect: .sessionWrite)
    public static let anonymous = Op<Empty, SessionReply>("auth.anonymous", access: .anyone, effect: .fresh)
    public static let upgrade = Op<RegisterRequest, SessionReply>("auth.upgrade", access: .user, effect: .sessionWrite)
    public static let refresh = Op<RefreshRequest, SessionReply>("auth.refresh", access: .anyone, effect: .fresh)
    public static let logout = Op<RefreshRequest, Empty>("auth.logout", access: .anyone, effect: .write)
    public static let me = Op<Empty, UserReply>("auth.me", access: .user, effect: .read)
    public static let profileUpdate = Op<ProfileUpdateRequest, UserReply>(
        "auth.profile.update", access: .user, effect: .write, maxAttachments: 1)
    public static let locationSet = Op<LocationSetRequest, UserReply>("auth.location.set", access: .user, effect: .write)
    public static let passwordChange = Op<PasswordChangeRequest, SessionReply>(
        "auth.password.change", access: .user, effect: .sessionWrite)
    /// Confirms an address with the token its mail carried (a new account's, or a new address's).
    public static let emailVerify = Op<EmailTokenRequest, EmailVerifiedReply>("auth.email.verify", access: .anyone, effect: .write)
    /// Mails the caller's address a new confirmation link.
    public static let emailVerifyResend = Op<Empty, MailQueuedReply>("auth.email.verify.resend", access: .registered, effect: .write)
    /// Mails a reset link if an account has the address; answers the same either way.
    public static let passwordForgot = Op<PasswordForgotRequest, Empty>("auth.password.forgot", access: .anyone, effect: .write)
    /// Sets a new password with a reset link's token; every session ends, a new one begins.
    public static let passwordReset = Op<PasswordResetRequest, SessionReply>("auth.password.reset", access: .anyone, effect: .sessionWrite)
    /// Mails the new address a confirmation link and the old one a notice; the address changes when it is confirmed.
    public static let emailChange = Op<EmailChangeRequest, MailQueuedReply>("auth.email.change", access: .registered, effect: .write)
    /// Marks an account's address confirmed without a link: for the operator's `here`
    /// alone (support, a demo); every other peer gets `permission_denied`.
    public static let emailConfirm = Op<EmailRequest, EmailVerifiedReply>("auth.email.confirm", access: .anyone, effect: .write)
    /// The newest mail queued to an address, its links: only on a stack that keeps its mail
    /// (no relay) and shows links (`HEREABOUTS_MAIL_SHOW_LINKS`, `here up --demo`); else `permission_denied`.
    public static let mailLatest = Op<EmailRequest, MailPreviewReply>("auth.mail.latest", access: .anyone, effect: .read)
    public static let usersGet = Op<UsersGetRequest, UsersReply>("auth.users.get", access: .anyone, effect: .read)
    public static let usersLookup = Op<UsersLookupRequest, PublicUserReply>("auth.users.lookup", access: .registered, effect: .read)
    /// The reply's frame 1 holds the avatar's bytes.
    public static let avatarGet = Op<AvatarGetRequest, AvatarReply>("auth.avatar.get", access: .anyone, effect: .read)
    public static let delete = Op<DeleteRequest, Empty>("auth.delete", access: .user, effect: .write)
    public static let publicKey = Op<Empty, PublicKeysReply>("auth.publicKey", access: .anyone, effect: .read)
    /// For services only (the edge does not route it): which sessions ended.
    public static let sessionsEnded = Op<SessionsRequest, SessionsEndedReply>("auth.sessions.ended", access: .anyone, effect: .read)
    public static let changes = Op<ChangesRequest, ChangesReply<UserChange>>("auth.changes", access: .anyone, effect: .read)
    public static let health = HealthAPI.health(service)
}

/// A session's tokens, with the user they belong to.
public struct SessionReply: Codable, Sendable, Equatable {
    public var user: User
    public var accessToken: String
    public var refreshToken: String
    /// Seconds until the access token expires.
    public var expiresIn: Int

    public init(user: User, accessToken: String, refreshToken: String, expiresIn: Int) {
        self.user = user
        self.accessToken = accessToken
        self.refreshToken = refreshToken
        self.expiresIn = expiresIn
    }
}

public struct UserReply: Codable, Sendable, Equatable {
    public var user: User
    public init(user: User) { self.user = user }
}

public struct UsersReply: Codable, Sendable, Equatable {
    public var users: [PublicProfile]
    public init(users: [PublicProfile]) { self.users = users }
}

public struct PublicUserReply: Codable, Sendable, Equatable {
    public var user: PublicProfile
    public init(user: PublicProfile) { self.user = user }
}

public struct AvatarReply: Codable, Sendable, Equatable {
    public var contentType: String
    public init(contentType: String) { self.contentType = contentType }
}

/// An Ed25519 public key as a JSON Web Key (RFC 8037).
public struct PublicKeyJWK: Codable, Sendable, Equatable {
    public var kid: String
    public var alg: String
    /// The raw 32-byte public key, base64url without padding.
    public var x: String
    public var kty: String
    public var crv: String

    public init(kid: String, x: String) {
        self.kid = kid
        self.alg = "EdDSA"
        self.x = x
        self.kty = "OKP"
        self.crv = "Ed25519"
    }
}

public struct PublicKeysReply: Codable, Sendable, Equatable {
    public var keys: [PublicKeyJWK]
    public init(keys: [PublicKeyJWK]) { self.keys = keys }
}
