import Contracts
import Foundation
@testable import Auth
import Mail
import ServiceClient
import ServiceKitTesting
import TestThreads
import Testing
import Wire

@Suite("Account mail: confirming addresses, forgotten passwords, new addresses", .serialized, .ownThread)
struct AccountMailTests {
    static let base = "https://app.example.org"

    static func fixture(_ relay: SMTPTestServer) throws -> AuthFixture {
        try AuthFixture(environment: ["HEREABOUTS_SMTP_URL": "smtp://127.0.0.1:\(relay.port)?starttls=off",
                                      "HEREABOUTS_PUBLIC_URL": "https://app.example.org/",
                                      "HEREABOUTS_MAIL_FROM": "Hereabouts Tests <no-reply@app.example.org>"])
    }

    @Test("registering mails a link in the account's language; its token confirms the address once, and followers hear of it")
    func confirmOnRegistration() throws {
        let relay = try SMTPTestServer()
        let auth = try Self.fixture(relay)
        let session = try auth.client.call(AuthAPI.register, RegisterRequest(email: "Kai@Example.org", password: "correct horse battery",
                                                                             displayName: "Kai", lang: "de-CH"))
        #expect(!session.user.emailVerified && session.user.lang == "de")
        let mails = relay.waitFor(1)
        try #require(mails.count == 1)
        #expect(mails[0].recipients == ["Kai@Example.org"])
        #expect(mails[0].subject == "Bestätige deine E-Mail-Adresse für Hereabouts", "\(mails[0].subject)")
        #expect(mails[0].text.hasPrefix("Hallo Kai,\n\nBitte bestätige"))
        #expect(mails[0].data.contains("From: \"Hereabouts Tests\" <no-reply@app.example.org>"))
        let link = try #require(mails[0].link(base: Self.base))
        #expect(link.path == "/email/verify" && link.token.count == 32)

        // Once the relay took it, the token is left in auth's file only as its hash.
        var kept = try #require(try auth.service.store.latestMail(to: "kai@example.org"))
        for _ in 0..<100 where !kept.message.text.isEmpty {  // the relay keeps it a moment before it answers
            Thread.sleep(forTimeInterval: 0.02)
            kept = try #require(try auth.service.store.latestMail(to: "kai@example.org"))
        }
        #expect(kept.message.text.isEmpty && kept.message.html.isEmpty && kept.message.subject == mails[0].subject)
        let verified = try auth.client.call(AuthAPI.emailVerify, EmailTokenRequest(token: link.token))
        #expect(verified == EmailVerifiedReply(email: "Kai@Example.org"))
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: session.accessToken).user.emailVerified)
        #expect(try auth.changes().last?.user?.emailVerified == true)
        // Once only; and a token nobody made is refused the same way.
        for token in [link.token, String(repeating: "A", count: 32)] {
            let refused = auth.failure(AuthAPI.emailVerify, EmailTokenRequest(token: token))
            #expect(refused?.code == .invalidArgument && refused?.field == "token", "\(String(describing: refused))")
        }
        // Confirmed already: nothing to resend.
        #expect(auth.failure(AuthAPI.emailVerifyResend, Empty(), token: session.accessToken)?.code == .conflict)
        // English for anyone else, and a language that is no tag is refused.
        _ = try auth.client.call(AuthAPI.register, RegisterRequest(email: "en@example.org", password: "correct horse battery", lang: "fr"))
        #expect(relay.waitFor(2).last?.subject == "Confirm your email address for Hereabouts")
        #expect(auth.failure(AuthAPI.register, RegisterRequest(email: "x@example.org", password: "correct horse battery", lang: "not a tag"))?.field == "lang")
    }

    @Test("a resend makes the earlier link stop working; an address gets at most 5 mails an hour")
    func resendAndBudget() throws {
        let relay = try SMTPTestServer()
        let auth = try Self.fixture(relay)
        let session = try auth.register("resend")
        let first = try #require(relay.waitFor(1).first?.link(base: Self.base))
        #expect(try auth.client.call(AuthAPI.emailVerifyResend, Empty(), token: session.accessToken) == MailQueuedReply(sentTo: "resend@example.org"))
        let second = try #require(relay.waitFor(2).last?.link(base: Self.base))
        #expect(first.token != second.token)
        #expect(auth.failure(AuthAPI.emailVerify, EmailTokenRequest(token: first.token))?.field == "token")
        for _ in 0..<3 { _ = try auth.client.call(AuthAPI.emailVerifyResend, Empty(), token: session.accessToken) }
        let refused = auth.failure(AuthAPI.emailVerifyResend, Empty(), token: session.accessToken)
        #expect(refused?.code == .rateLimited && (refused?.retryAfterMs ?? 0) > 3_000_000, "\(String(describing: refused))")
        #expect(relay.waitFor(5).count == 5)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(relay.messages.count == 5)
        // Only the newest link works.
        #expect(try auth.client.call(AuthAPI.emailVerify, EmailTokenRequest(token: try #require(relay.messages.last?.link(base: Self.base)).token)).emailVerified)
    }

    @Test("forgot password: the same answer for every address, one single-use link to the account's; the reset ends every session")
    func forgottenPassword() throws {
        let relay = try SMTPTestServer()
        let auth = try Self.fixture(relay)
        let session = try auth.register("forgetful")
        let other = try auth.client.call(AuthAPI.login, LoginRequest(login: "forgetful@example.org", password: "correct horse battery"))
        _ = relay.waitFor(1)  // the confirmation

        // Known and unknown addresses: the same reply, byte for byte, and the same work (one queued request each).
        let known = try auth.stack.exchangeRaw("auth", frames: [Data(#"{"v":1,"op":"auth.password.forgot","id":"f1","body":{"email":"Forgetful@example.org"}}"#.utf8)])
        let unknown = try auth.stack.exchangeRaw("auth", frames: [Data(#"{"v":1,"op":"auth.password.forgot","id":"f2","body":{"email":"nobody@example.org"}}"#.utf8)])
        let answers = [known, unknown].map { $0.map { String(decoding: $0[0], as: UTF8.self) } }
        #expect(answers[0] == #"{"v":1,"id":"f1","ok":true,"body":{}}"# && answers[1] == #"{"v":1,"id":"f2","ok":true,"body":{}}"#, "\(answers)")
        let mails = relay.waitFor(2)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(relay.messages.count == 2 && mails.allSatisfy { $0.recipients == ["forgetful@example.org"] })
        #expect(mails.last?.subject == "Reset your Hereabouts password")
        let link = try #require(mails.last?.link(base: Self.base))
        #expect(link.path == "/password/reset")

        let reset = try auth.client.call(AuthAPI.passwordReset, PasswordResetRequest(token: link.token, newPassword: "a brand new password"))
        #expect(reset.user.email == "forgetful@example.org" && reset.user.emailVerified)
        // Every earlier session has ended; the new one works, as does the new password, not the old.
        for old in [session, other] {
            #expect(auth.failure(AuthAPI.refresh, RefreshRequest(refreshToken: old.refreshToken))?.code == .unauthenticated)
        }
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: reset.accessToken).user.id == session.user.id)
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "forgetful@example.org", password: "correct horse battery"))?.code == .unauthenticated)
        _ = try auth.client.call(AuthAPI.login, LoginRequest(login: "forgetful@example.org", password: "a brand new password"))
        // The link works once; an expired one not at all.
        #expect(auth.failure(AuthAPI.passwordReset, PasswordResetRequest(token: link.token, newPassword: "yet another password"))?.field == "token")
        let expired = try auth.service.store.database.pool.write { db in
            try auth.service.store.issueMailToken(.reset, userID: session.user.id, email: "forgetful@example.org", lifetime: -1, now: Date(), in: db)
        }
        #expect(auth.failure(AuthAPI.passwordReset, PasswordResetRequest(token: expired, newPassword: "yet another password"))?.field == "token")
        // A confirmation link is no reset link.
        let confirmation = try #require(relay.messages.first?.link(base: Self.base))
        #expect(auth.failure(AuthAPI.passwordReset, PasswordResetRequest(token: confirmation.token, newPassword: "yet another password"))?.field == "token")
    }

    @Test("one client address makes at most 10 mail requests at once (20 an hour): forgotten passwords, resends, resets, new addresses")
    func requestsPerAddress() throws {
        let auth = try AuthFixture()
        for index in 0..<10 {
            #expect(auth.failure(AuthAPI.passwordForgot, PasswordForgotRequest(email: "x\(index)@example.org"), origin: "203.0.113.9") == nil)
        }
        let refused = auth.failure(AuthAPI.passwordReset, PasswordResetRequest(token: String(repeating: "A", count: 32), newPassword: "password9"),
                                   origin: "203.0.113.9")
        #expect(refused?.code == .rateLimited && (refused?.retryAfterMs ?? 0) > 60_000, "\(String(describing: refused))")
        // Another address is not held up.
        #expect(auth.failure(AuthAPI.passwordForgot, PasswordForgotRequest(email: "y@example.org"), origin: "203.0.113.10") == nil)
    }

    @Test("forgot password takes the same time for an account's address as for no one's (medians of interleaved calls)")
    func forgottenPasswordTiming() throws {
        let relay = try SMTPTestServer()
        let auth = try Self.fixture(relay)
        try auth.register("timed")
        var known: [Double] = [], unknown: [Double] = []
        let client = auth.stack.client("auth", timeout: 10)
        for round in 0..<40 {
            for (address, times) in [("timed@example.org", 0), ("nobody\(round)@example.org", 1)] {
                let started = Date()
                _ = try client.callRaw(op: AuthAPI.passwordForgot.name, body: .object(["email": .string(address)]), token: nil,
                                       origin: "client-\(round)-\(times)")
                let elapsed = Date().timeIntervalSince(started) * 1000
                if times == 0 { known.append(elapsed) } else { unknown.append(elapsed) }
            }
        }
        let median = { (values: [Double]) in values.sorted()[values.count / 2] }
        print("auth.password.forgot median: account's address \(median(known)) ms, no one's \(median(unknown)) ms")
        // The handler does the same for both (one queued request); what differs is noise.
        #expect(abs(median(known) - median(unknown)) < max(2, 0.5 * min(median(known), median(unknown))))
    }

    @Test("a new address: the password is required; the new address confirms, the old hears of it; the address changes on confirmation")
    func changeAddress() throws {
        let relay = try SMTPTestServer()
        let auth = try Self.fixture(relay)
        let session = try auth.register("mover")
        try auth.register("taken")
        _ = relay.waitFor(2)
        #expect(auth.failure(AuthAPI.emailChange, EmailChangeRequest(email: "new@example.org", password: "wrong password"),
                             token: session.accessToken)?.code == .unauthenticated)
        #expect(auth.failure(AuthAPI.emailChange, EmailChangeRequest(email: "TAKEN@example.org", password: "correct horse battery"),
                             token: session.accessToken)?.code == .alreadyExists)
        #expect(auth.failure(AuthAPI.emailChange, EmailChangeRequest(email: "mover@example.org", password: "correct horse battery"),
                             token: session.accessToken)?.field == "email")
        let queued = try auth.client.call(AuthAPI.emailChange, EmailChangeRequest(email: "new@example.org", password: "correct horse battery"),
                                          token: session.accessToken)
        #expect(queued.sentTo == "new@example.org")
        let mails = relay.waitFor(4)
        try #require(mails.count == 4)
        let confirm = try #require(mails.first { $0.recipients == ["new@example.org"] })
        let notice = try #require(mails.first { $0.recipients == ["mover@example.org"] && $0.subject.contains("about to change") })
        #expect(notice.link(base: Self.base) == nil && notice.text.contains("new@example.org"))
        // Not changed until confirmed.
        let before = try auth.client.call(AuthAPI.me, Empty(), token: session.accessToken).user
        #expect(before.email == "mover@example.org" && before.pendingEmail == "new@example.org")
        let verified = try auth.client.call(AuthAPI.emailVerify, EmailTokenRequest(token: try #require(confirm.link(base: Self.base)).token))
        #expect(verified.email == "new@example.org")
        let after = try auth.client.call(AuthAPI.me, Empty(), token: session.accessToken).user
        #expect(after.email == "new@example.org" && after.emailVerified && after.pendingEmail == nil)
        _ = try auth.client.call(AuthAPI.login, LoginRequest(login: "new@example.org", password: "correct horse battery"))
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "mover@example.org", password: "correct horse battery"))?.code == .unauthenticated)
        // The first confirmation link (for the old address) confirms nothing now.
        #expect(auth.failure(AuthAPI.emailVerify, EmailTokenRequest(token: try #require(mails[0].link(base: Self.base)).token))?.field == "token")
    }

    @Test("a relay that refuses with 451 first and drops the connection mid-DATA next: every mail arrives exactly once")
    func flakyRelay() throws {
        let relay = try SMTPTestServer(.init(refuseFirst: 1, dropFirst: 1))
        let auth = try Self.fixture(relay)
        for index in 0..<4 { try auth.register("flaky\(index)") }
        let mails = relay.waitFor(4)
        Thread.sleep(forTimeInterval: 1)
        #expect(relay.messages.count == 4)
        #expect(Set(mails.flatMap(\.recipients)) == Set((0..<4).map { "flaky\($0)@example.org" }))
        let health = try auth.client.call(AuthAPI.health, Empty())
        #expect(health.mail?.pending == 0 && health.mail?.sentLastDay == 4 && health.mail?.lastError != nil, "\(String(describing: health.mail))")
    }

    @Test("with the relay down, mail waits in the outbox across a restart and leaves once the relay is back; a 550 is given up")
    func outboxAcrossRestart() throws {
        let port = Int(try ChildProcess.freeEndpoint().split(separator: ":").last ?? "") ?? 0
        let auth = try AuthFixture(environment: ["HEREABOUTS_SMTP_URL": "smtp://127.0.0.1:\(port)?starttls=off",
                                                 "HEREABOUTS_PUBLIC_URL": "https://app.example.org"])
        try auth.register("patient")
        var status: MailQueueStatus?
        for _ in 0..<100 {
            status = try auth.client.call(AuthAPI.health, Empty()).mail
            if status?.lastError != nil { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(status?.pending == 1 && status?.lastError?.contains("cannot connect") == true, "\(String(describing: status))")
        try auth.restart()
        let relay = try SMTPTestServer(.init(port: port))
        let mails = relay.waitFor(1)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(mails.count == 1 && relay.messages.count == 1 && mails.first?.recipients == ["patient@example.org"])
        relay.stop()

        let refusing = try SMTPTestServer(.init(rejectAll: true, port: port))
        try auth.register("refused")
        for _ in 0..<100 {
            status = try auth.client.call(AuthAPI.health, Empty()).mail
            if status?.failedLastDay == 1 { break }
            Thread.sleep(forTimeInterval: 0.05)
        }
        #expect(status?.failedLastDay == 1 && status?.pending == 0 && status?.lastError?.contains("550") == true, "\(String(describing: status))")
        #expect(refusing.messages.isEmpty)
    }

    @Test("a development stack (no relay, HEREABOUTS_MAIL_SHOW_LINKS) shows an address's newest mail and its links; no other stack does")
    func mailPreview() throws {
        let auth = try AuthFixture(environment: ["HEREABOUTS_MAIL_SHOW_LINKS": "1"])
        try auth.register("preview")
        let preview = try auth.client.call(AuthAPI.mailLatest, EmailRequest(email: "Preview@example.org"))
        #expect(preview.to == "preview@example.org" && preview.subject == "Confirm your email address for Hereabouts")
        let link = try #require(preview.links.first.flatMap { URLComponents(string: $0) })
        #expect(link.path == "/email/verify")
        _ = try auth.client.call(AuthAPI.emailVerify, EmailTokenRequest(token: try #require(link.queryItems?.first?.value)))
        #expect(auth.failure(AuthAPI.mailLatest, EmailRequest(email: "nobody@example.org"))?.code == .notFound)

        let plain = try AuthFixture()
        try plain.register("private")
        #expect(plain.failure(AuthAPI.mailLatest, EmailRequest(email: "private@example.org"))?.code == .permissionDenied)
        // Never beside a relay: the service does not start.
        let stack = try TestStack()
        var settings = try stack.settings(for: "auth")
        settings.environment["HEREABOUTS_MAIL_SHOW_LINKS"] = "1"
        settings.environment["HEREABOUTS_SMTP_URL"] = "smtp://127.0.0.1:25?starttls=off"
        #expect(throws: (any Error).self) { _ = try AuthService(settings: settings, logger: TestStack.logger("auth")) }
        stack.stop()
    }

    @Test("without a relay, each mail is an .eml file in <data dir>/mail")
    func mailDrop() throws {
        let auth = try AuthFixture()
        try auth.register("dropped")
        let directory = auth.stack.directory.appendingPathComponent("mail")
        var files: [String] = []
        for _ in 0..<100 where files.isEmpty {
            files = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".eml") }
            if files.isEmpty { Thread.sleep(forTimeInterval: 0.05) }
        }
        try #require(files.count == 1)
        let text = try String(contentsOf: directory.appendingPathComponent(files[0]), encoding: .utf8)
        #expect(text.contains("To: dropped@example.org\r\n") && text.contains("http://127.0.0.1:8080/email/verify?token=3D"))
        #expect(try auth.client.call(AuthAPI.health, Empty()).mail?.transport == "files in \(directory.path)")
    }
}
