import Contracts
import Foundation
import GRDB
import Mail
import ServiceKit
import Wire

/// The flows that go through a person's mailbox. Each mail is queued in the
/// transaction that makes its token (`MailSender` delivers it); tokens are checked
/// only by their hash, and a used, expired or unknown one is refused alike.
extension AuthHandlers {
    static let invalidToken = ServiceError.invalidArgument(
        field: "token", "this link is not valid: it was used already, has expired, or a newer one was sent; ask for a new one")

    /// Mail requests one client address may make (forgotten passwords, resends, changes
    /// together): twenty an hour, ten at once. Each address mailed has its own budget too
    /// (`AuthStore.mailsPerAddress`).
    static let mailRequests = RateLimiter.Policy(perSecond: 20.0 / 3_600, burst: 10)

    func registerAccountMail(into router: inout Router) {
        router.write(AuthAPI.emailVerify, verifyEmail)
        router.write(AuthAPI.emailVerifyResend, resendConfirmation)
        router.write(AuthAPI.passwordForgot, forgotPassword)
        router.sessionWrite(AuthAPI.passwordReset, lane: .pool(Self.hashingPool), state: SessionState.self, handle: resetPassword,
                            replay: { state, request, context in try reissue(state, password: request.newPassword, context) })
        router.write(AuthAPI.emailChange, lane: .pool(Self.hashingPool), changeEmail)
        router.read(AuthAPI.mailLatest, latestMail)
        router.write(AuthAPI.emailConfirm, confirmByOperator)
        router.operatorsOnly(AuthAPI.emailConfirm)
        let requests = AddressLimit(RateLimiter(policy: Self.mailRequests), refusal: "too many mail requests from this address; try again later")
        router.limitByAddress(AuthAPI.passwordForgot, requests)
        router.limitByAddress(AuthAPI.emailVerifyResend, requests)
        router.limitByAddress(AuthAPI.emailChange, requests)
        // Resets cost a password hash before the token is looked at: refused by address first.
        router.limitByAddress(AuthAPI.passwordReset, requests)
    }

    /// Queues the confirmation of a new account's address, when the address's budget
    /// has room (otherwise the account is made all the same; a resend asks again later).
    func mailConfirmation(to user: User, now: Date, in db: Database) throws {
        guard let email = user.email, !user.emailVerified, try store.mailBudgetWait(recipient: email, now: now, in: db) == nil else { return }
        let token = try store.issueMailToken(.verify, userID: user.id, email: email, lifetime: AccountMail.verifyLifetime, now: now, in: db)
        try store.enqueue(AccountMail.verify(token: token).message(to: email, name: user.displayName, lang: user.lang, settings: mail, now: now),
                          now: now, in: db)
    }

    func verifyEmail(_ request: EmailTokenRequest, _ context: RequestContext) throws -> Committed<EmailVerifiedReply> {
        let now = Date()
        return try context.commit { db in
            guard let token = try store.redeem(token: request.token, purposes: [.verify, .change], now: now, in: db) else {
                throw Self.invalidToken
            }
            switch token.purpose {
            case .change:
                let user = try store.adoptEmail(userID: token.userID, email: token.email, now: now, in: db)
                return EmailVerifiedReply(email: user.email ?? token.email)
            case .verify, .reset:
                // The account's address changed since the mail left: that link confirms nothing now.
                guard let user = try store.confirmEmail(userID: token.userID, email: token.email, now: now, in: db) else {
                    throw Self.invalidToken
                }
                return EmailVerifiedReply(email: user.email ?? token.email)
            }
        }
    }

    func resendConfirmation(_ request: Empty, _ context: RequestContext) throws -> Committed<MailQueuedReply> {
        let caller = try context.requireCaller()
        let now = Date()
        return try context.commit { db in
            let user = try existingUser(caller.userID, in: db)
            guard let email = user.email else { throw ServiceError.permissionDenied("this account has no email address") }
            guard !user.emailVerified else { throw ServiceError.conflict("\(email) is confirmed already") }
            try checkMailBudget(email, now: now, in: db)
            try mailConfirmation(to: user, now: now, in: db)
            return MailQueuedReply(sentTo: email)
        }
    }

    /// Development only (`AccountMailSettings.showsLinks`): the newest mail to an address.
    func latestMail(_ request: EmailRequest, _ context: RequestContext) throws -> MailPreviewReply {
        guard mail.showsLinks else {
            throw ServiceError.permissionDenied("mail links are shown only on a development stack without a relay (HEREABOUTS_MAIL_SHOW_LINKS)")
        }
        guard let latest = try store.latestMail(to: request.email) else { throw ServiceError.notFound("no mail to \(request.email)") }
        return MailPreviewReply(to: latest.message.to.address, subject: latest.message.subject,
                                links: ReadMail.links(in: latest.message.text), queuedAt: latest.queuedAt)
    }

    /// The operator vouches for an address (support, the demo's accounts).
    func confirmByOperator(_ request: EmailRequest, _ context: RequestContext) throws -> Committed<EmailVerifiedReply> {
        let now = Date()
        return try context.commit { db in
            guard let account = try store.accountForMail(emailKey: request.email.lowercased(), in: db), let email = account.email,
                  let user = try store.confirmEmail(userID: account.id, email: email, now: now, in: db) else {
                throw ServiceError.notFound("no account has \(request.email)")
            }
            return EmailVerifiedReply(email: user.email ?? email)
        }
    }

    /// One write whether or not an account has the address, so the answer and its time
    /// tell nothing; `MailSender` decides, off the request path, whether a mail goes.
    func forgotPassword(_ request: PasswordForgotRequest, _ context: RequestContext) throws -> Committed<Empty> {
        let now = Date()
        return try context.commit { db in
            try store.queueResetRequest(email: request.email, now: now, in: db)
            return Empty()
        }
    }

    func resetPassword(_ request: PasswordResetRequest, _ context: RequestContext) throws -> Committed<SessionReply> {
        let hash = try hasher.hash(request.newPassword)
        let now = Date()
        return try context.commitSession { db in
            guard let token = try store.redeem(token: request.token, purposes: [.reset], now: now, in: db) else { throw Self.invalidToken }
            try store.setPasswordHash(userID: token.userID, hash, in: db)
            try store.revokeAllSessions(userID: token.userID, reason: "password-reset", now: now, in: db)
            // The link came through the mailbox: the address is its owner's.
            _ = try store.confirmEmail(userID: token.userID, email: token.email, now: now, in: db)
            try store.noteSignIn(userID: token.userID, origin: context.origin, now: now, in: db)
            return try openSession(for: try existingUser(token.userID, in: db), now: now, in: db)
        }
    }

    func changeEmail(_ request: EmailChangeRequest, _ context: RequestContext) throws -> Committed<MailQueuedReply> {
        let caller = try context.requireCaller()
        let now = Date()
        let attempt = try checkPassword(request.password, of: caller.userID, context, now: now, wrong: "the password is wrong",
                                        none: "anonymous users have no address to change; upgrade the account first")
        // Taken now is refused now; taken before it is confirmed is refused then.
        try checkAvailable(email: request.email, username: nil, except: caller.userID)
        return try context.commit { db in
            try store.forgive(attempt, in: db)
            let user = try existingUser(caller.userID, in: db)
            guard user.email?.lowercased() != request.email.lowercased() else {
                throw ServiceError.invalidArgument(field: "email", "this is the account's address already")
            }
            try checkMailBudget(request.email, now: now, in: db)
            let token = try store.issueMailToken(.change, userID: user.id, email: request.email, lifetime: AccountMail.verifyLifetime,
                                                 now: now, in: db)
            try store.setPendingEmail(userID: user.id, request.email, now: now, in: db)
            try store.enqueue(AccountMail.confirmNewAddress(token: token, newEmail: request.email)
                .message(to: request.email, name: user.displayName, lang: user.lang, settings: mail, now: now), now: now, in: db)
            // The old address hears of it (unless it was mailed too much this hour).
            if let old = user.email, try store.mailBudgetWait(recipient: old, now: now, in: db) == nil {
                try store.enqueue(AccountMail.addressChangeRequested(newEmail: request.email)
                    .message(to: old, name: user.displayName, lang: user.lang, settings: mail, now: now), now: now, in: db)
            }
            return MailQueuedReply(sentTo: request.email)
        }
    }

    /// `rate_limited` while `email` has had its mails for the hour.
    private func checkMailBudget(_ email: String, now: Date, in db: Database) throws {
        if let wait = try store.mailBudgetWait(recipient: email, now: now, in: db) {
            throw ServiceError.rateLimited("\(email) was sent \(AuthStore.mailsPerAddress) mails in the last hour; try again later",
                                           retryAfterMs: Int((wait * 1000).rounded(.up)))
        }
    }
}
