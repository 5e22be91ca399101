import EdgeFixtures
import Foundation
import HereaboutsKit
import ServiceKitTesting
import TestThreads
import Testing

/// Account mail through HereaboutsKit alone, against `here up`'s processes mailing a
/// real SMTP server (aiosmtpd): what an app's "confirm your address", "forgot
/// password" and "change address" screens do.
@Suite("HereaboutsKit: account mail over SMTP", .ownThread)
struct AccountMailKitTests {
    @Test("confirm an address from its mailed link, reset a forgotten password (every other session ends), move to a new address")
    func accountMail() async throws {
        let relay = try SMTPTestServer()
        let base = "https://app.example.org"
        let stack = try EdgeStack("kit-mail", environment: ["HEREABOUTS_SMTP_URL": "smtp://127.0.0.1:\(relay.port)?starttls=off",
                                                            "HEREABOUTS_PUBLIC_URL": base])
        defer { stack.stop() }
        let phone = kit(stack.port, languages: ["de-DE"])
        let registered = try await phone.register(email: "lena@example.org", password: "password1", displayName: "Lena")
        #expect(registered.emailVerified == false && registered.lang == "de")
        let confirmation = try await eventually("the confirmation") { relay.messages.first }
        #expect(confirmation.subject == "Bestätige deine E-Mail-Adresse für Hereabouts" && confirmation.text.hasPrefix("Hallo Lena,"))
        let link = try #require(confirmation.link(base: base))
        #expect(link.path == "/email/verify")
        #expect(try await phone.verifyEmail(token: link.token) == "lena@example.org")
        #expect(try await phone.me().emailVerified == true)
        do {
            try await phone.verifyEmail(token: link.token)
            Issue.record("a link worked twice")
        } catch let error as HereaboutsError {
            #expect(error.field == "token" && error.status == 422, "\(error)")
        }

        // Forgotten on another phone: the tablet, still signed in, is signed out by the reset.
        let tablet = kit(stack.port)
        try await tablet.login("lena@example.org", password: "password1")
        let other = kit(stack.port)
        try await other.forgotPassword(email: "lena@example.org")
        try await other.forgotPassword(email: "no-one@example.org")
        let resetMail = try await eventually("the reset mail") { relay.messages.count >= 2 ? relay.messages[1] : nil }
        #expect(resetMail.recipients == ["lena@example.org"] && resetMail.subject == "Setze dein Hereabouts-Passwort zurück")
        let reset = try #require(resetMail.link(base: base))
        #expect(reset.path == "/password/reset")
        let signedIn = try await other.resetPassword(token: reset.token, newPassword: "password2")
        #expect(signedIn.email == "lena@example.org")
        await #expect(throws: HereaboutsError.self) { _ = try await tablet.me() }

        // A new address, confirmed from its own mail; the old one hears of it.
        #expect(try await other.changeEmail(to: "lena@example.net", password: "password2") == "lena@example.net")
        #expect(try await other.me().pendingEmail == "lena@example.net")
        let moved = try await eventually("the new address's mail") { relay.messages.first { $0.recipients == ["lena@example.net"] } }
        _ = try await eventually("the notice") { relay.messages.first { $0.recipients == ["lena@example.org"] && $0.link(base: base) == nil } }
        try await other.verifyEmail(token: try #require(moved.link(base: base)).token)
        let me = try await other.me()
        #expect(me.email == "lena@example.net" && me.emailVerified == true && me.pendingEmail == nil)
        // Nothing went to the address no account has: the confirmation, the reset, the new address's link, the notice.
        try await Task.sleep(for: .milliseconds(500))
        #expect(relay.messages.count == 4, "\(relay.messages.map(\.recipients))")
    }
}
