import Contracts
import Foundation
import Synchronization
import HTTPTypes
import Mail
import ServiceKitTesting
import Testing
import Wire

/// One walk over every route, as two phone users and an operator would take it:
/// each answer's status, and what a user would read in it.
struct Journey {
    let http: RouteClient
    let operatorToken: String
    /// The operator's address: named by id, an operator only once it is confirmed.
    let operatorEmail: String
    /// Where auth's mail lands (no relay here: the mail drop).
    let mailbox: Mailbox

    func walk() async throws {
        let ann = try await accounts()
        let bob = try await register("bob@example.org")
        let post = try await posts(owner: ann)
        try await search(for: post, as: bob)
        try await social(ann: ann, bob: bob, post: post)
        try await trips(ann: ann, bob: bob)
        try await accountMail(bob: bob)
        try await edgeOwn(ann: ann)
        try await leaving(ann: ann, bob: bob, post: post)
    }

    struct User { let token: String, refresh: String, id: String }

    private func register(_ email: String) async throws -> User {
        let answer = try await http.call(.post, "/v1/auth/register", json: ["email": .string(email), "password": "password1"])
        try #require(answer.status == 201, "\(answer)")
        return User(token: answer.string("accessToken"), refresh: answer.string("refreshToken"), id: answer.string("user", "id"))
    }

    /// Sign-up, sign-in, tokens, the profile and its avatar, other users.
    private func accounts() async throws -> User {
        let anonymous = try await http.call(.post, "/v1/auth/anonymous")
        #expect(anonymous.status == 201, "\(anonymous)")
        let upgraded = try await http.call(.post, "/v1/auth/upgrade", token: anonymous.string("accessToken"),
                                           json: ["email": "ann@example.org", "password": "password1"])
        #expect(upgraded.status == 200 && upgraded.string("user", "email") == "ann@example.org", "\(upgraded)")
        let login = try await http.call(.post, "/v1/auth/login", json: ["login": "ann@example.org", "password": "password1"])
        #expect(login.status == 200, "\(login)")
        let refreshed = try await http.call(.post, "/v1/auth/refresh", json: ["refreshToken": .string(login.string("refreshToken"))])
        #expect(refreshed.status == 200 && !refreshed.string("accessToken").isEmpty, "\(refreshed)")
        let ann = User(token: refreshed.string("accessToken"), refresh: refreshed.string("refreshToken"), id: login.string("user", "id"))

        let me = try await http.call(.get, "/v1/me", token: ann.token)
        #expect(me.status == 200 && me.string("user", "id") == ann.id, "\(me)")
        try await expectStatus(401, http.call(.get, "/v1/me"))
        let renamed = try await http.call(.patch, "/v1/me", token: ann.token, json: ["displayName": "Ann"])
        #expect(renamed.status == 200 && renamed.string("user", "displayName") == "Ann", "\(renamed)")
        let avatar = try await http.call(.put, "/v1/me/avatar", token: ann.token, body: TestImages.png(width: 3, height: 3),
                                         contentType: "image/png")
        #expect(avatar.status == 200, "\(avatar)")
        let served = try await http.call(.get, "/v1/users/\(ann.id)/avatar")
        #expect(served.status == 200 && served.headers[.contentType] == "image/png", "\(served)")
        try await expectStatus(200, http.call(.delete, "/v1/me/avatar", token: ann.token))
        try await expectStatus(404, http.call(.get, "/v1/users/\(ann.id)/avatar"))
        let located = try await http.call(.put, "/v1/me/location", token: ann.token, json: ["lat": 52.09, "lon": 5.12, "discoverable": true])
        #expect(located.status == 200, "\(located)")
        let password = try await http.call(.post, "/v1/me/password", token: ann.token,
                                           json: ["oldPassword": "password1", "newPassword": "password2"])
        #expect(password.status == 200 && password.string("user", "id") == ann.id, "\(password)")

        let one = try await http.call(.get, "/v1/users/\(ann.id)")
        #expect(one.status == 200 && one.string("user", "displayName") == "Ann", "\(one)")
        try await expectStatus(404, http.call(.get, "/v1/users/nobody"))
        let many = try await http.call(.get, "/v1/users?ids=\(ann.id)")
        #expect(many.status == 200 && many.object["users"]?.arrayValue?.count == 1, "\(many)")
        let found = try await http.call(.get, "/v1/users/lookup?email=ann@example.org", token: ann.token)
        #expect(found.status == 200 && found.string("user", "id") == ann.id, "\(found)")
        let keys = try await http.call(.get, "/.well-known/jwks.json")
        #expect(keys.status == 200 && keys.object["keys"]?.arrayValue?.isEmpty == false, "\(keys)")
        return ann
    }

    /// A post with a photo, read, listed, changed and rated.
    private func posts(owner: User) async throws -> String {
        let created = try await http.call(.post, "/v1/posts", token: owner.token,
                                          json: ["kind": "restaurant", "title": "Burger Bar", "lat": 52.0907, "lon": 5.1214, "tags": ["vegan"]])
        try #require(created.status == 201, "\(created)")
        #expect(created.string("post", "place", "city") == "Utrecht", "the town comes from the nearest place")
        // Mid-Atlantic: the nearest town is 300 km off, so the post has none.
        let atSea = try await http.call(.post, "/v1/posts", token: owner.token, json: ["kind": "tip", "title": "Mid-Atlantic", "lat": 0, "lon": -30])
        #expect(atSea.status == 201 && atSea.json.objectValue?["post"]?.objectValue?["place"] == .null, "\(atSea)")
        let post = created.string("post", "id")
        #expect(created.headers[.location] == "/v1/posts/\(post)")
        let imported = try await http.call(.post, "/v1/posts/import", token: owner.token,
                                           json: ["posts": [["kind": "sight", "title": "Dom Tower", "lat": 52.0908, "lon": 5.1215, "ref": "dom"]]])
        #expect(imported.status == 200 && imported.object["created"] == 1, "\(imported)")

        let upload = try await http.call(.post, "/v1/posts/\(post)/images", token: owner.token, body: TestImages.jpeg, contentType: "image/jpeg")
        try #require(upload.status == 201, "\(upload)")
        let image = upload.string("image", "id")
        let photo = try await http.call(.get, "/v1/images/\(image)")
        #expect(photo.status == 200 && photo.headers[.contentType] == "image/jpeg", "\(photo)")
        try await expectStatus(204, http.call(.delete, "/v1/images/\(image)", token: owner.token))
        try await expectStatus(404, http.call(.get, "/v1/images/\(image)"))

        let read = try await http.call(.get, "/v1/posts/\(post)")
        let version = Int(read.json["post"]?["version"]?.doubleValue ?? 0)
        #expect(read.status == 200 && read.string("post", "title") == "Burger Bar" && read.headers[.eTag] == "\"\(version)\"", "\(read)")
        let listed = try await http.call(.get, "/v1/posts?owner=\(owner.id)&limit=1")
        #expect(listed.status == 200 && listed.object["posts"]?.arrayValue?.count == 1 && listed.headers[HTTPField.Name("Link")!] != nil, "\(listed)")
        let many = try await http.call(.get, "/v1/posts?ids=\(post)")
        #expect(many.status == 200 && many.object["posts"]?.arrayValue?.count == 1, "\(many)")
        let edited = try await http.call(.patch, "/v1/posts/\(post)", token: owner.token, json: ["title": "Burger Bar Utrecht"],
                                         headers: [.ifMatch: read.headers[.eTag] ?? ""])
        #expect(edited.status == 200 && edited.string("post", "title") == "Burger Bar Utrecht", "\(edited)")
        let stale = try await http.call(.patch, "/v1/posts/\(post)", token: owner.token, json: ["title": "Old"], headers: [.ifMatch: read.headers[.eTag] ?? ""])
        #expect(stale.status == 412, "\(stale)")
        let rated = try await http.call(.put, "/v1/posts/\(post)/rating", token: owner.token, json: ["stars": 4])
        #expect(rated.status == 200, "\(rated)")
        return post
    }

    /// Finding the post around a point and a named place, nearest, in a box; places,
    /// countries and fences.
    private func search(for post: String, as user: User) async throws {
        // Geo follows catalogue a moment behind.
        let hits = try await eventually("the post in search") {
            let answer = try await http.call(.get, "/v1/search?lat=52.09&lon=5.12&radius=1000&q=burger")
            return answer.object["hits"]?.arrayValue?.count == 1 ? answer : nil
        }
        #expect(hits.status == 200, "\(hits)")
        let named = try await http.call(.get, "/v1/search?place=Utrecht&radius=2000&q=burger")
        #expect(named.status == 200 && named.object["hits"]?.arrayValue?.count == 1, "\(named)")
        let nearest = try await http.call(.get, "/v1/nearest?lat=52.09&lon=5.12&k=2")
        #expect(nearest.status == 200 && nearest.object["hits"]?.arrayValue?.count == 2, "\(nearest)")
        let within = try await http.call(.get, "/v1/within?minLat=52&minLon=5&maxLat=53&maxLon=6")
        #expect(within.status == 200 && within.object["hits"]?.arrayValue?.count == 2, "\(within)")
        try await expectStatus(422, http.call(.get, "/v1/search?lat=91&lon=0&radius=10"))

        let places = try await http.call(.get, "/v1/places?q=Utrecht")
        #expect(places.status == 200 && places.object["places"]?.arrayValue?.isEmpty == false, "\(places)")
        let reverse = try await http.call(.get, "/v1/places/reverse?lat=52.09&lon=5.12")
        #expect(reverse.status == 200 && reverse.string("place", "name") == "Utrecht", "\(reverse)")
        let country = try await http.call(.get, "/v1/countries/NL")
        #expect(country.status == 200 && country.string("country", "code") == "NL", "\(country)")
        let plan = try await http.call(.get, "/v1/fences/plan?lat=52.09&lon=5.12", token: user.token)
        #expect(plan.status == 200, "\(plan)")
        let fences = try await http.call(.post, "/v1/fences/update", token: user.token, json: ["lat": 52.09, "lon": 5.12])
        #expect(fences.status == 200, "\(fences)")
        let near = try await eventually("a discoverable user near") {
            let answer = try await http.call(.get, "/v1/users/near?lat=52.09&lon=5.12&radius=5000", token: user.token)
            return answer.object["users"]?.arrayValue?.isEmpty == false ? answer : nil
        }
        #expect(near.status == 200)
    }

    /// Favourites, messages, blocks, mutes, push devices.
    private func social(ann: User, bob: User, post: String) async throws {
        try await expectStatus(200, http.call(.put, "/v1/favourites/\(post)", token: bob.token))
        let saved = try await http.call(.get, "/v1/favourites?expand=posts", token: bob.token)
        #expect(saved.status == 200 && saved.object["items"]?.arrayValue?.first?.objectValue?["post"] != nil, "\(saved)")
        let contains = try await http.call(.get, "/v1/favourites/contains?ids=\(post),other", token: bob.token)
        #expect(contains.status == 200, "\(contains)")
        try await expectStatus(200, http.call(.delete, "/v1/favourites/\(post)", token: bob.token))

        let sent = try await http.call(.post, "/v1/messages", token: bob.token, json: ["to": .string(ann.id), "text": "Is it still open?"])
        try #require(sent.status == 201, "\(sent)")
        let conversation = sent.string("message", "conversationId")
        let inbox = try await http.call(.get, "/v1/conversations", token: ann.token)
        #expect(inbox.status == 200 && inbox.object["conversations"]?.arrayValue?.count == 1, "\(inbox)")
        let messages = try await http.call(.get, "/v1/conversations/\(conversation)/messages", token: ann.token)
        #expect(messages.status == 200 && messages.object["messages"]?.arrayValue?.count == 1, "\(messages)")
        try await expectStatus(200, http.call(.post, "/v1/conversations/\(conversation)/read", token: ann.token, json: ["seq": 1]))
        try await expectStatus(204, http.call(.put, "/v1/blocks/\(bob.id)", token: ann.token))
        let blocked = try await http.call(.post, "/v1/messages", token: bob.token, json: ["to": .string(ann.id), "text": "Hello?"])
        #expect(blocked.status == 403, "\(blocked)")
        try await expectStatus(204, http.call(.delete, "/v1/blocks/\(bob.id)", token: ann.token))

        let muted = try await http.call(.put, "/v1/conversations/\(conversation)/mute", token: ann.token, json: ["muted": .bool(true)])
        #expect(muted.status == 200 && muted.object["muted"] == .bool(true), "\(muted)")
        let vapid = try await http.call(.get, "/v1/push/vapid-key")
        #expect(vapid.status == 200 && vapid.string("publicKey").count == 87, "\(vapid)")
        let token = String(repeating: "ab", count: 32)
        let device = try await http.call(.post, "/v1/devices", token: ann.token,
                                         json: ["platform": "apns", "token": .string(token), "environment": "sandbox", "topic": "org.example.app"])
        try #require(device.status == 201 && device.string("device", "token") == token, "\(device)")
        let badToken = try await http.call(.post, "/v1/devices", token: ann.token, json: ["platform": "apns", "token": "not hex", "topic": "a.b"])
        #expect(badToken.status == 422 && badToken.object["field"] == .string("token"), "\(badToken)")
        let devices = try await http.call(.get, "/v1/devices", token: ann.token)
        #expect(devices.status == 200 && devices.object["devices"]?.arrayValue?.count == 1, "\(devices)")
        let id = device.string("device", "id")
        try await expectStatus(204, http.call(.delete, "/v1/devices/\(id)", token: ann.token))
        try await expectStatus(404, http.call(.delete, "/v1/devices/\(id)", token: ann.token))
    }

    /// A trip, shared and left, and its calendar.
    private func trips(ann: User, bob: User) async throws {
        let created = try await http.call(.post, "/v1/trips", token: ann.token,
                                          json: ["title": "Utrecht weekend", "city": "Utrecht", "countryCode": "NL",
                                                 "start": "2027-04-02", "end": "2027-04-04"])
        try #require(created.status == 201, "\(created)")
        let trip = created.string("trip", "id")
        try await expectStatus(200, http.call(.post, "/v1/trips/\(trip)/members", token: ann.token, json: ["userId": .string(bob.id)]))
        let shared = try await http.call(.get, "/v1/trips/\(trip)", token: bob.token)
        #expect(shared.status == 200 && shared.string("trip", "title") == "Utrecht weekend", "\(shared)")
        let listed = try await http.call(.get, "/v1/trips", token: bob.token)
        #expect(listed.status == 200 && listed.object["trips"]?.arrayValue?.count == 1, "\(listed)")
        #expect(shared.string("trip", "role") == "invited", "\(shared)")
        let accepted = try await http.call(.put, "/v1/trips/\(trip)/members/me", token: bob.token)
        #expect(accepted.status == 200 && accepted.string("trip", "role") == "member", "\(accepted)")
        let calendar = try await http.call(.get, "/v1/trips/\(trip)/calendar.ics", token: bob.token)
        #expect(calendar.status == 200 && String(buffer: calendar.body).hasPrefix("BEGIN:VCALENDAR"), "\(calendar)")
        try await expectStatus(204, http.call(.delete, "/v1/trips/\(trip)/members/me", token: bob.token))
        try await expectStatus(403, http.call(.get, "/v1/trips/\(trip)", token: bob.token))
        try await expectStatus(204, http.call(.delete, "/v1/trips/\(trip)", token: ann.token))
    }

    /// The edge's own routes: health, its document, the events socket's address, operators.
    /// An address confirmed by its link, a forgotten password reset, a new address.
    private func accountMail(bob: User) async throws {
        let registered = try await http.call(.post, "/v1/auth/register", json: ["email": "carol@example.org", "password": "password1"],
                                             headers: [.acceptLanguage: "de-DE, en;q=0.5"])
        try #require(registered.status == 201, "\(registered)")
        #expect(registered.object["user"]?.objectValue?["emailVerified"] == false && registered.string("user", "lang") == "de")
        let confirmation = try await mailbox.link(to: "carol@example.org", path: "/email/verify")
        #expect(confirmation.subject.hasPrefix("Bestätige deine E-Mail-Adresse"), "\(confirmation.subject)")
        let verified = try await http.call(.post, "/v1/auth/email/verify", json: ["token": .string(confirmation.token)])
        #expect(verified.status == 200 && verified.string("email") == "carol@example.org", "\(verified)")
        let again = try await http.call(.post, "/v1/auth/email/verify", json: ["token": .string(confirmation.token)])
        #expect(again.status == 422 && again.string("field") == "token", "\(again)")
        let resent = try await http.call(.post, "/v1/auth/email/verify/resend", token: bob.token)
        #expect(resent.status == 202 && resent.string("sentTo") == "bob@example.org", "\(resent)")

        // Forgotten: the same answer for an account's address and for no one's.
        let known = try await http.call(.post, "/v1/auth/password/forgot", json: ["email": "carol@example.org"])
        let unknown = try await http.call(.post, "/v1/auth/password/forgot", json: ["email": "nobody@example.org"])
        #expect(known.status == 202 && unknown.status == 202 && known.body == unknown.body, "\(known) \(unknown)")
        let reset = try await mailbox.link(to: "carol@example.org", path: "/password/reset")
        let session = try await http.call(.post, "/v1/auth/password/reset", json: ["token": .string(reset.token), "newPassword": "password3"])
        #expect(session.status == 200 && session.string("user", "email") == "carol@example.org", "\(session)")
        let carol = session.string("accessToken")

        let moved = try await http.call(.post, "/v1/me/email", token: carol, json: ["email": "carol@example.net", "password": "password3"])
        #expect(moved.status == 202 && moved.string("sentTo") == "carol@example.net", "\(moved)")
        let change = try await mailbox.link(to: "carol@example.net", path: "/email/verify")
        try await expectStatus(200, http.call(.post, "/v1/auth/email/verify", json: ["token": .string(change.token)]))
        let me = try await http.call(.get, "/v1/me", token: carol)
        #expect(me.string("user", "email") == "carol@example.net", "\(me)")
        // Mail links are shown only on a development stack (here up --demo): not here.
        try await expectStatus(403, http.call(.get, "/v1/dev/mail?email=carol%40example.net"))
        // The links open the console.
        let page = try await http.call(.get, "/password/reset?token=\(reset.token)")
        #expect(page.status == 200 && String(buffer: page.body).contains("<html"), "\(page.status)")
        try await expectStatus(200, http.call(.get, "/email/verify?token=\(change.token)"))
    }

    private func edgeOwn(ann: User) async throws {
        try await expectStatus(200, http.call(.get, "/health/live"))
        let ready = try await http.call(.get, "/health/ready")
        #expect(ready.status == 200, "\(ready)")
        let document = try await http.call(.get, "/openapi.yaml")
        #expect(document.status == 200 && String(buffer: document.body).hasPrefix("openapi:"), "\(String(buffer: document.body).prefix(40))")
        // Without the upgrade, the events route says how to use it.
        let events = try await http.call(.get, "/v1/events")
        #expect(events.status == 426 || events.status == 400, "\(events)")
        let notOperator = try await http.call(.get, "/v1/operator", token: ann.token)
        #expect(notOperator.status == 200 && notOperator.object["operator"] == false, "\(notOperator)")
        try await expectStatus(403, http.call(.get, "/v1/operator/status", token: ann.token))
        try await expectStatus(403, http.call(.get, "/v1/operator/status", token: operatorToken))
        let confirmation = try await mailbox.link(to: operatorEmail, path: "/email/verify")
        try await expectStatus(200, http.call(.post, "/v1/auth/email/verify", json: ["token": .string(confirmation.token)]))
        let status = try await http.call(.get, "/v1/operator/status", token: operatorToken)
        #expect(status.status == 200, "\(status)")
    }

    /// A post deleted, a session ended, an account deleted.
    private func leaving(ann: User, bob: User, post: String) async throws {
        try await expectStatus(204, http.call(.delete, "/v1/posts/\(post)", token: ann.token))
        try await expectStatus(404, http.call(.get, "/v1/posts/\(post)"))
        let deleted = try await http.call(.delete, "/v1/me", token: bob.token, json: ["password": "password1"])
        #expect(deleted.status == 204, "\(deleted)")
        try await expectStatus(404, http.call(.get, "/v1/users/\(bob.id)"))
        try await expectStatus(204, http.call(.post, "/v1/auth/logout", json: ["refreshToken": .string(ann.refresh)]))
        try await expectStatus(401, http.call(.post, "/v1/auth/refresh", json: ["refreshToken": .string(ann.refresh)]))
    }

    private func expectStatus(_ status: Int, _ answer: Answer, sourceLocation: SourceLocation = #_sourceLocation) async throws {
        #expect(answer.status == status, "\(answer)", sourceLocation: sourceLocation)
    }

    /// Until `body` gives a value, for 20 s at most.
    private func eventually<T>(_ what: String, _ body: () async throws -> T?) async throws -> T {
        let deadline = Date().addingTimeInterval(20)
        while Date() < deadline {
            if let value = try await body() { return value }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ServiceError.unavailable("\(what): nothing after 20 s")
    }
}

/// The mail drop auth writes to: waits for a message to an address with a link.
struct Mailbox: Sendable {
    let directory: URL

    struct Link { let token: String, subject: String }

    /// The newest link with `path` in a message to `address`, waiting up to 10 s for one not seen before.
    func link(to address: String, path: String) async throws -> Link {
        for _ in 0..<200 {
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []).filter { $0.hasSuffix(".eml") }
            for name in files {
                let mail = ReadMail((try? String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)) ?? "")
                guard mail.to == address, let token = Self.token(in: mail.links, path: path),
                      !Mailbox.seen.withLock({ $0.contains(token) }) else { continue }
                Mailbox.seen.withLock { _ = $0.insert(token) }
                return Link(token: token, subject: mail.subject)
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw ServiceError(code: .internal, message: "no mail to \(address) with a \(path) link in \(directory.path)")
    }

    private static let seen = Mutex<Set<String>>([])

    /// The `token` of the first link with `path`.
    private static func token(in links: [String], path: String) -> String? {
        for link in links {
            guard let url = URLComponents(string: link), url.path == path else { continue }
            return url.queryItems?.first { $0.name == "token" }?.value
        }
        return nil
    }
}
