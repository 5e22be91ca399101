import Contracts
import Foundation
import GRDB
import Logging
import Mail
import ServiceClient
import ServiceKit
import Synchronization

/// Delivers auth's mail outbox on a thread of its own: turns queued forgotten-password
/// requests into tokens and mail, then tries every message that is due. A message the
/// relay refuses for now (4xx, a broken or refused connection) is tried again after
/// 30 s, doubling up to an hour, for two days; one refused for good (5xx) is given up
/// at once. A commit that queues mail wakes it (a transaction observer), so mail
/// leaves within moments of the request that made it.
final class MailSender: Sendable {
    /// How long a message is tried before it is given up.
    static let giveUpAfter: TimeInterval = 2 * 86_400

    private let store: AuthStore
    private let settings: AccountMailSettings
    private let logger: Logger
    private let status: Mutex<MailQueueStatus>
    /// The wait after a first failure (30 s; less in tests).
    private let retryDelay: TimeInterval
    private let loop: Mutex<WorkerLoop?> = Mutex(nil)

    init(store: AuthStore, settings: AccountMailSettings, retryDelay: TimeInterval = 30, logger: Logger) {
        self.store = store
        self.retryDelay = retryDelay
        self.settings = settings
        self.logger = logger
        status = Mutex(MailQueueStatus(pending: 0, oldestPendingSeconds: nil, failedLastDay: 0, sentLastDay: 0, lastError: nil,
                                       transport: settings.transport.description))
        OutboxWake.observe(["mail_outbox", "password_reset_request"], in: store.database) { [weak self] in self?.wake() }
    }

    /// The outbox as of the last pass: `health` answers from memory.
    var queueStatus: MailQueueStatus { status.withLock { $0 } }

    func start() {
        logger.info("mail leaves through \(settings.transport.description)")
        let worker = WorkerLoop(name: "mail") { [self] in pass() }
        loop.withLock { $0 = worker }
        worker.start()
    }

    /// Returns once a delivery under way has finished.
    func stop() {
        loop.withLock { $0 }?.stop()
    }

    func wake() {
        loop.withLock { $0 }?.wake()
    }

    private var isStopped: Bool { loop.withLock { $0 }?.isStopped ?? true }

    /// Reset requests, then due mail; returns when the next message is due (at most 30 s on).
    private func pass() -> Date {
        var next = Date().addingTimeInterval(30)
        do {
            try resolveResetRequests()
            try deliverDue()
            if let due = try store.nextMailDue() { next = min(next, due) }
            let current = try store.mailQueueStatus(now: Date(), transport: settings.transport.description)
            status.withLock { $0 = current }
        } catch {
            logger.error("the mail sender's pass failed", metadata: ["error": "\(error)"])
        }
        return next
    }

    /// Each request becomes a token and a mail when an account has the address and the
    /// address's budget has room; nothing otherwise. One transaction each.
    private func resolveResetRequests() throws {
        for request in try store.resetRequests() {
            try store.resolveResetRequest(request.id) { db in
                let now = Date()
                guard let account = try store.accountForMail(emailKey: request.emailKey, in: db), let email = account.email,
                      try store.mailBudgetWait(recipient: email, now: now, in: db) == nil else { return }
                let token = try store.issueMailToken(.reset, userID: account.id, email: email, lifetime: AccountMail.resetLifetime,
                                                     now: now, in: db)
                try store.enqueue(AccountMail.reset(token: token).message(to: email, name: account.displayName, lang: account.lang,
                                                                          settings: settings, now: now), now: now, in: db)
            }
        }
    }

    private func deliverDue() throws {
        // Each message once per pass: one whose outcome could not be recorded waits for the next.
        var tried = Set<Int64>()
        while !isStopped {
            let due = try store.dueMail(now: Date()).filter { !tried.contains($0.id) }
            if due.isEmpty { return }
            for mail in due {
                if isStopped { return }
                tried.insert(mail.id)
                deliver(mail)
            }
        }
    }

    private func deliver(_ mail: QueuedMail) {
        do {
            try settings.transport.deliver(mail.message)
            // A development stack shows sent mail's links (auth.mail.latest); no other keeps them.
            try store.markMailSent(mail.id, now: Date(), forgetBody: !settings.showsLinks)
            logger.info("mail sent", metadata: ["id": "\(mail.id)", "messageID": "\(mail.message.messageID)"])
        } catch {
            let now = Date()
            let failure = error as? MailDeliveryError ?? .transient("\(error)")
            do {
                switch failure {
                case .transient(let reason) where now.timeIntervalSince(mail.createdAt) < Self.giveUpAfter:
                    let delay = OutboxWake.backoff(afterAttempts: mail.attempts + 1, first: retryDelay)
                    try store.markMailRetry(mail.id, error: reason, at: now.addingTimeInterval(delay))
                    logger.warning("mail not delivered; trying again", metadata: ["id": "\(mail.id)", "in": "\(Int(delay)) s", "reason": "\(reason)"])
                case .transient(let reason), .permanent(let reason):
                    try store.markMailFailed(mail.id, error: reason, now: now)
                    logger.error("mail given up", metadata: ["id": "\(mail.id)", "reason": "\(reason)"])
                }
            } catch {
                logger.error("cannot record a delivery's outcome", metadata: ["id": "\(mail.id)", "error": "\(error)"])
            }
        }
    }
}
