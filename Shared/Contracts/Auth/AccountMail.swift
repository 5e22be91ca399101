import Foundation
import Wire

// The requests and replies of the flows that go through a person's mailbox: confirming
// an address, a forgotten password, a new address. Each mails a link that carries a
// single-use token (`token`, 32 characters of base64url: 192 random bits).

/// `auth.email.verify`: the token of a confirmation link (a new account's address, or
/// a new address of `auth.email.change`).
public struct EmailTokenRequest: ValidatedBody, Equatable {
    public var token: String
    public init(token: String) { self.token = token }

    public func validate() throws {
        try AuthRules.mailToken(token)
    }
}

/// `auth.email.verify`'s answer: the address that is now the account's, confirmed.
public struct EmailVerifiedReply: Codable, Sendable, Equatable {
    public var email: String
    public var emailVerified: Bool

    public init(email: String) {
        self.email = email
        emailVerified = true
    }
}

/// `auth.password.forgot`: answered the same whether or not an account has the address.
public typealias PasswordForgotRequest = EmailRequest

/// `auth.password.reset`: a reset link's token and the password to set.
public struct PasswordResetRequest: ValidatedBody, HoldsSecrets, Equatable {
    public var token: String
    public var newPassword: String

    public init(token: String, newPassword: String) {
        self.token = token
        self.newPassword = newPassword
    }

    public func validate() throws {
        try AuthRules.mailToken(token)
        try AuthRules.password(newPassword, field: "newPassword")
    }

    /// The token stays: a retry must name the same link.
    public var withoutSecrets: PasswordResetRequest { PasswordResetRequest(token: token, newPassword: "") }
}

/// `auth.email.change`: the new address, and the password, since whoever holds a
/// session should not be able to take the account's mail away.
public struct EmailChangeRequest: ValidatedBody, HoldsSecrets, Equatable {
    public var email: String
    public var password: String

    public init(email: String, password: String) {
        self.email = email
        self.password = password
    }

    public func validate() throws {
        try AuthRules.email(email)
        try Check.length(password, field: "password", in: 1...AuthRules.password.upperBound)
    }

    public var withoutSecrets: EmailChangeRequest { EmailChangeRequest(email: email, password: "") }
}

/// `auth.email.verify.resend` and `auth.email.change`: where the mail went.
public struct MailQueuedReply: Codable, Sendable, Equatable {
    /// The address the link was sent to.
    public var sentTo: String
    public init(sentTo: String) { self.sentTo = sentTo }
}

/// The mail a service sends, in its `health`: what waits, and what was given up.
public struct MailQueueStatus: Codable, Sendable, Equatable {
    /// Messages not delivered yet (waiting for their first try or a retry).
    public var pending: Int
    /// Seconds the oldest of them has waited; nil when none waits.
    public var oldestPendingSeconds: Double?
    /// Messages given up in the last 24 hours (refused for good, or still refused after two days).
    public var failedLastDay: Int
    /// Messages delivered in the last 24 hours.
    public var sentLastDay: Int
    /// Why the last try that failed did; nil when none has.
    public var lastError: String?
    /// `smtp://relay.example.org:587`, or `files in /data/mail`.
    public var transport: String

    public init(pending: Int, oldestPendingSeconds: Double?, failedLastDay: Int, sentLastDay: Int, lastError: String?,
                transport: String) {
        self.pending = pending
        self.oldestPendingSeconds = oldestPendingSeconds
        self.failedLastDay = failedLastDay
        self.sentLastDay = sentLastDay
        self.lastError = lastError
        self.transport = transport
    }
}

/// `auth.mail.latest` (development only): the newest mail queued to an address, so the
/// console can offer its link where no mail leaves.
public struct MailPreviewReply: Codable, Sendable, Equatable {
    public var to: String
    public var subject: String
    /// The links in the mail's text, in order.
    public var links: [String]
    public var queuedAt: Date

    public init(to: String, subject: String, links: [String], queuedAt: Date) {
        self.to = to
        self.subject = subject
        self.links = links
        self.queuedAt = queuedAt
    }
}
