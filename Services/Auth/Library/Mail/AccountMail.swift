import Foundation
import Mail

/// The mails auth writes, in English and German, each as text and as HTML with the
/// same words. Links carry the token as the query parameter `token`.
enum AccountMail: Sendable {
    /// A new account's address (or, after `auth.email.verify.resend`, its address again).
    case verify(token: String)
    /// A forgotten password: valid for an hour, once.
    case reset(token: String)
    /// To the new address of `auth.email.change`.
    case confirmNewAddress(token: String, newEmail: String)
    /// To the old address of `auth.email.change`: no link, only the news.
    case addressChangeRequested(newEmail: String)

    /// How long the token of each kind of link can be used.
    static let verifyLifetime: TimeInterval = 48 * 3600
    static let resetLifetime: TimeInterval = 3600

    /// German for a `de…` language, English otherwise.
    static func isGerman(_ lang: String?) -> Bool {
        lang.map { $0.lowercased() == "de" || $0.lowercased().hasPrefix("de-") } ?? false
    }

    func message(to recipient: String, name: String?, lang: String?, settings: AccountMailSettings, now: Date) -> MailMessage {
        let german = Self.isGerman(lang)
        let greeting = german ? "Hallo\(name.map { " \($0)" } ?? ""),"  : "Hello\(name.map { " \($0)" } ?? ""),"
        let (subject, paragraphs, link, linkLabel) = german ? germanWords(settings) : englishWords(settings)
        let closing = german
            ? "Diese Nachricht wurde automatisch verschickt; Antworten liest niemand."
            : "This message was sent automatically; replies are not read."
        var text = greeting + "\n\n" + paragraphs.joined(separator: "\n\n")
        if let link { text += "\n\n\(link)" }
        text += "\n\n-- \n\(closing)\n"
        var html = "<!doctype html><html lang=\"\(german ? "de" : "en")\"><body style=\"font-family: sans-serif\">"
        html += "<p>\(Self.escaped(greeting))</p>"
        for paragraph in paragraphs { html += "<p>\(Self.escaped(paragraph))</p>" }
        if let link, let linkLabel {
            html += "<p><a href=\"\(Self.escaped(link))\">\(Self.escaped(linkLabel))</a></p>"
            html += "<p style=\"color:#666;font-size:small\">\(Self.escaped(link))</p>"
        }
        html += "<p style=\"color:#666;font-size:small\">\(Self.escaped(closing))</p></body></html>\n"
        return MailMessage(from: settings.from, to: MailAddress(recipient), subject: subject, text: text, html: html, date: now)
    }

    private func englishWords(_ settings: AccountMailSettings) -> (String, [String], String?, String?) {
        switch self {
        case .verify(let token):
            ("Confirm your email address for Hereabouts",
             ["Please confirm that this is your email address by opening the link below. It works for 48 hours.",
              "If you did not make an account, ignore this message."],
             Self.link(settings, "/email/verify", token), "Confirm my address")
        case .reset(let token):
            ("Reset your Hereabouts password",
             ["Someone, hopefully you, asked to reset the password of the account with this address. Open the link below to choose a new one. It works once, for one hour, and signs you out everywhere.",
              "If you did not ask, ignore this message: your password stays as it is."],
             Self.link(settings, "/password/reset", token), "Choose a new password")
        case .confirmNewAddress(let token, let newEmail):
            ("Confirm your new email address for Hereabouts",
             ["Please confirm that \(newEmail) is the new address of your account by opening the link below. It works for 48 hours; until then your account keeps its old address.",
              "If you did not ask for this, ignore this message."],
             Self.link(settings, "/email/verify", token), "Confirm my new address")
        case .addressChangeRequested(let newEmail):
            ("Your Hereabouts address is about to change",
             ["Someone signed in to your account asked to change its email address to \(newEmail). It changes when that address is confirmed.",
              "If that was not you, change your password now: whoever asked knows it."],
             nil, nil)
        }
    }

    private func germanWords(_ settings: AccountMailSettings) -> (String, [String], String?, String?) {
        switch self {
        case .verify(let token):
            ("Bestätige deine E-Mail-Adresse für Hereabouts",
             ["Bitte bestätige mit dem Link unten, dass dies deine E-Mail-Adresse ist. Er gilt 48 Stunden.",
              "Wenn du kein Konto angelegt hast, kannst du diese Nachricht ignorieren."],
             Self.link(settings, "/email/verify", token), "Adresse bestätigen")
        case .reset(let token):
            ("Setze dein Hereabouts-Passwort zurück",
             ["Jemand, hoffentlich du, möchte das Passwort des Kontos mit dieser Adresse zurücksetzen. Mit dem Link unten wählst du ein neues. Er gilt einmal, eine Stunde lang, und meldet dich überall ab.",
              "Wenn du das nicht warst, ignoriere diese Nachricht: Dein Passwort bleibt, wie es ist."],
             Self.link(settings, "/password/reset", token), "Neues Passwort wählen")
        case .confirmNewAddress(let token, let newEmail):
            ("Bestätige deine neue E-Mail-Adresse für Hereabouts",
             ["Bitte bestätige mit dem Link unten, dass \(newEmail) die neue Adresse deines Kontos ist. Er gilt 48 Stunden; bis dahin behält dein Konto die alte Adresse.",
              "Wenn du das nicht angefragt hast, ignoriere diese Nachricht."],
             Self.link(settings, "/email/verify", token), "Neue Adresse bestätigen")
        case .addressChangeRequested(let newEmail):
            ("Die Adresse deines Hereabouts-Kontos soll sich ändern",
             ["Jemand, der in deinem Konto angemeldet ist, möchte seine E-Mail-Adresse in \(newEmail) ändern. Sie ändert sich, sobald diese Adresse bestätigt ist.",
              "Wenn du das nicht warst, ändere jetzt dein Passwort: Wer das angefragt hat, kennt es."],
             nil, nil)
        }
    }

    static func link(_ settings: AccountMailSettings, _ path: String, _ token: String) -> String {
        "\(settings.publicURL)\(path)?token=\(token)"
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
