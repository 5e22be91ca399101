import Foundation
import Push

/// How chat sends pushes, from the environment:
/// - `HEREABOUTS_APNS_KEY_FILE`, `HEREABOUTS_APNS_KEY_ID`, `HEREABOUTS_APNS_TEAM_ID`:
///   the team's token-signing key (`AuthKey_<id>.p8`), its key id and the team id. All
///   three or none; without them, pushes to Apple devices are given up (health says why).
/// - `HEREABOUTS_APNS_URL`: one APNs host for both environments (a proxy, a test's
///   stand-in), an `https` URL; Apple's production and sandbox hosts by default, by each
///   device's environment.
/// - `HEREABOUTS_VAPID_SUBJECT`: the contact push services see (`mailto:ops@example.org`
///   or an https URL); by default `mailto:` the mail sender's address, else the public URL.
/// - `HEREABOUTS_WEBPUSH_HOSTS`: the push services subscriptions may point at, as host
///   suffixes separated by commas; `*` for any. By default the browsers' own (Google,
///   Mozilla, Apple, Microsoft): an endpoint is a URL a client chose, and the server
///   POSTs to it, so it must not be able to point inside the network.
/// - `HEREABOUTS_PUSH_CA_FILE`: PEM certificates trusted besides the system's.
/// - `HEREABOUTS_PUSH_CONCURRENCY`: pushes in flight at once (default 64).
/// - `HEREABOUTS_PUSH_BATCH`: messages to push the sender takes for their first try at
///   once (default 10,000): what a pass holds after the sender was held up.
/// - `HEREABOUTS_PUSH_PRIORITY`: `background` (the default: the push sender's thread runs
///   at nice 19, so the requests' threads get the cores first, `PushPriority`) or `normal`
///   (it competes with the requests' threads as equals).
/// - `HEREABOUTS_PUSH_CATCH_UP`: in `background`, how many seconds a message may wait for
///   its push before the sender's passes move to a thread of normal priority (default 1;
///   they stay there until no message has waited that long for 10 s).
struct PushSettings: Sendable {
    var apns: (credentials: APNsCredentials, url: String?)?
    var caFile: String?
    var vapidSubject: String
    /// Host suffixes a Web Push endpoint may have; nil for any.
    var webPushHosts: [String]?
    var concurrency: Int
    var firstTries: Int
    var priority: PushPriority
    var catchUpAfter: TimeInterval

    static let browserPushServices = ["fcm.googleapis.com", "push.services.mozilla.com", "push.apple.com", "notify.windows.com"]

    struct ConfigurationError: Error, CustomStringConvertible {
        var description: String
    }

    init(environment: [String: String]) throws {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        let apnsKeys = [value("HEREABOUTS_APNS_KEY_FILE"), value("HEREABOUTS_APNS_KEY_ID"), value("HEREABOUTS_APNS_TEAM_ID")]
        if let file = apnsKeys[0], let keyID = apnsKeys[1], let teamID = apnsKeys[2] {
            let url = value("HEREABOUTS_APNS_URL")
            // APNs is HTTP/2 over TLS only: any other URL would fail every push, for a day each.
            if let url, URLComponents(string: url).map({ $0.scheme?.lowercased() != "https" || ($0.host ?? "").isEmpty }) ?? true {
                throw ConfigurationError(description: "HEREABOUTS_APNS_URL must be an https URL (https://host or https://host:port), not \(url)")
            }
            do {
                apns = (try APNsCredentials(keyID: keyID, teamID: teamID, keyFile: file), url)
            } catch {
                throw ConfigurationError(description: "HEREABOUTS_APNS_KEY_FILE must be the .p8 key from Apple (a P-256 private key in PEM): \(file): \(error)")
            }
        } else if apnsKeys.contains(where: { $0 != nil }) {
            throw ConfigurationError(description: "set all of HEREABOUTS_APNS_KEY_FILE, HEREABOUTS_APNS_KEY_ID and HEREABOUTS_APNS_TEAM_ID, or none")
        }
        caFile = value("HEREABOUTS_PUSH_CA_FILE")
        if let subject = value("HEREABOUTS_VAPID_SUBJECT") {
            guard subject.hasPrefix("mailto:") || subject.hasPrefix("https://") else {
                throw ConfigurationError(description: "HEREABOUTS_VAPID_SUBJECT must be a mailto: or https: URL, not \(subject)")
            }
            vapidSubject = subject
        } else if let from = value("HEREABOUTS_MAIL_FROM"), let address = Self.bareAddress(from) {
            vapidSubject = "mailto:\(address)"
        } else {
            vapidSubject = value("HEREABOUTS_PUBLIC_URL").flatMap { $0.hasPrefix("https://") ? $0 : nil } ?? "mailto:postmaster@hereabouts.localhost"
        }
        switch value("HEREABOUTS_WEBPUSH_HOSTS") {
        case "*": webPushHosts = nil
        case let list?: webPushHosts = list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }.filter { !$0.isEmpty }
        case nil: webPushHosts = Self.browserPushServices
        }
        let concurrency = value("HEREABOUTS_PUSH_CONCURRENCY").map { Int($0) }
        guard let chosen = concurrency ?? 64, (1...1_000).contains(chosen) else {
            throw ConfigurationError(description: "HEREABOUTS_PUSH_CONCURRENCY must be a number from 1 to 1000")
        }
        self.concurrency = chosen
        let firstTries = value("HEREABOUTS_PUSH_BATCH").map { Int($0) }
        guard let taken = firstTries ?? 10_000, (1...1_000_000).contains(taken) else {
            throw ConfigurationError(description: "HEREABOUTS_PUSH_BATCH must be a number from 1 to 1000000")
        }
        self.firstTries = taken
        let priority = value("HEREABOUTS_PUSH_PRIORITY").map { PushPriority(rawValue: $0.lowercased()) }
        guard let chosenPriority = priority ?? .background else {
            throw ConfigurationError(description: "HEREABOUTS_PUSH_PRIORITY must be \(PushPriority.allCases.map(\.rawValue).joined(separator: " or "))")
        }
        self.priority = chosenPriority
        let catchUp = value("HEREABOUTS_PUSH_CATCH_UP").map { TimeInterval($0) }
        guard let chosenCatchUp = catchUp ?? 1, chosenCatchUp.isFinite, chosenCatchUp > 0, chosenCatchUp <= 3_600 else {
            throw ConfigurationError(description: "HEREABOUTS_PUSH_CATCH_UP must be a number of seconds over 0, at most 3600")
        }
        catchUpAfter = chosenCatchUp
    }

    /// `a@b` from `Name <a@b>` or `a@b`.
    static func bareAddress(_ text: String) -> String? {
        var address = text.trimmingCharacters(in: .whitespaces)
        if address.hasSuffix(">"), let open = address.lastIndex(of: "<") {
            address = String(address[address.index(after: open)..<address.index(before: address.endIndex)])
        }
        return address.contains("@") && !address.contains(where: { $0.isWhitespace || $0 == "<" || $0 == ">" }) ? address : nil
    }

    /// Whether the server may POST to this Web Push endpoint: its host is one of the allowed push services or below one.
    func allowsEndpoint(_ endpoint: String) -> Bool {
        guard let host = URLComponents(string: endpoint)?.host?.lowercased() else { return false }
        guard let webPushHosts else { return true }
        return webPushHosts.contains { host == $0 || host.hasSuffix("." + $0) }
    }

    var transports: [String] {
        [apns.map { "apns: \($0.url ?? "\(APNsClient.productionURL), \(APNsClient.sandboxURL)")" } ?? "apns: not configured (HEREABOUTS_APNS_KEY_FILE)",
         "webpush: " + (webPushHosts.map { $0.joined(separator: ", ") } ?? "any host")]
    }
}
