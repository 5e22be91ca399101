import Contracts
import Foundation
import Wire

/// What `here up --demo` puts in a new stack, so every app has something to show:
/// a bike shop and a restaurant in Utrecht, sights on a walk with geofences, tips
/// in Köln, two divers by the Zeeland coast, and an operator. All accounts share one password.
public enum DemoData {
    public static let password = "hereabouts-demo"
    /// The account that sees the console's operators' page in a demo stack.
    public static let operatorEmail = "operator@demo.hereabouts"
    /// Written into the data directory once the demo is seeded; it holds the
    /// operator's user id, which `here up` names to the edge on every start.
    public static let markerFile = "demo-seeded"

    /// The demo operator's user id, as the marker of a seeded data directory keeps it;
    /// nil without one (or one written before it kept the id: such a demo has no operator).
    public static func operatorId(marker: URL) -> String? {
        guard let text = try? String(contentsOf: marker, encoding: .utf8) else { return nil }
        let id = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return Identifier.isValidEntityID(id) ? id : nil
    }

    struct Account {
        var email: String
        var displayName: String
        var attributes: Attributes? = nil
        var home: (lat: Double, lon: Double)? = nil
    }

    /// What seeding made: a line per account, and the operator's user id.
    public struct Seeded: Sendable {
        public var lines: [String]
        public var operatorId: String
    }

    /// Seeds through the public ops, as any client would; each account's address is
    /// then confirmed by the operator's `here` (`auth.email.confirm`), so the demo works
    /// with `HEREABOUTS_REQUIRE_VERIFIED_EMAIL` and its operator sees the operators' page.
    public static func seed(_ gateway: Gateway) throws -> Seeded {
        func confirm(_ email: String) throws {
            _ = try gateway.call(AuthAPI.emailConfirm, EmailRequest(email: email), token: .none)
        }
        func register(_ account: Account) throws -> SessionReply {
            let reply = try gateway.call(AuthAPI.register, RegisterRequest(email: account.email, password: password,
                                                                           displayName: account.displayName, attributes: account.attributes),
                                         token: .none)
            try confirm(account.email)
            if let home = account.home {
                _ = try gateway.client(AuthAPI.service).call(AuthAPI.locationSet, LocationSetRequest(lat: home.lat, lon: home.lon, discoverable: true),
                                                             token: reply.accessToken)
            }
            return reply
        }
        func post(_ owner: SessionReply, _ drafts: [PostDraft]) throws {
            _ = try gateway.client(CatalogueAPI.service).call(CatalogueAPI.importPosts, ImportPostsRequest(posts: drafts),
                                                              token: owner.accessToken)
        }
        let utrecht = PostPlace(city: "Utrecht", countryCode: "NL"), koln = PostPlace(city: "Köln", countryCode: "DE")
        let shop = try register(Account(email: "bikes@demo.hereabouts", displayName: "Utrecht Bikes"))
        try post(shop, [
            PostDraft(kind: "offer", title: "City bike, blue, 3 gears", text: "Serviced last month.", lat: 52.0907, lon: 5.1214,
                      tags: ["bike", "used"], price: Price(amount: 120, currency: "EUR"), place: utrecht, ref: "bike-1"),
            PostDraft(kind: "offer", title: "Cargo bike rental, per day", lat: 52.0894, lon: 5.1100, tags: ["bike", "rental"],
                      price: Price(amount: 35, currency: "EUR"), place: utrecht, ref: "cargo-1"),
        ])
        let diner = try register(Account(email: "burgers@demo.hereabouts", displayName: "Burger Bar Utrecht"))
        try post(diner, [
            PostDraft(kind: "restaurant", title: "Burger Bar", text: "Smash burgers, vegan too.", lat: 52.0929, lon: 5.1190,
                      category: "burgers", tags: ["burger", "vegan"], hours: "Mo-Th 11:00-22:00; Fr-Sa 11:00-02:00; Su 12:00-21:00",
                      timezone: "Europe/Amsterdam", place: utrecht, ref: "burger-bar"),
        ])
        let guide = try register(Account(email: "guide@demo.hereabouts", displayName: "Utrecht Walks"))
        try post(guide, [
            PostDraft(kind: "sight", title: "Dom Tower", text: "The tallest church tower in the Netherlands.", lat: 52.0908, lon: 5.1213,
                      place: utrecht, notifyRadius: 150, ref: "dom"),
            PostDraft(kind: "sight", title: "Oudegracht wharves", lat: 52.0893, lon: 5.1195, place: utrecht, notifyRadius: 100, ref: "oudegracht"),
            PostDraft(kind: "sight", title: "Rietveld Schröder House", lat: 52.0853, lon: 5.1476, place: utrecht, notifyRadius: 120,
                      ref: "rietveld"),
        ])
        let traveller = try register(Account(email: "tips@demo.hereabouts", displayName: "Köln Tips"))
        try post(traveller, [
            PostDraft(kind: "tip", title: "Café Reichard", text: "Cake with a view of the cathedral.", lat: 50.9413, lon: 6.9577,
                      category: "cafe", place: koln, ref: "reichard"),
            PostDraft(kind: "tip", title: "Day ticket", text: "KVB day ticket covers trams and buses.", lat: 50.9375, lon: 6.9603,
                      category: "transport", place: koln, ref: "kvb"),
        ])
        _ = try register(Account(email: "ann@demo.hereabouts", displayName: "Ann",
                                 attributes: ["certification": .string("AOWD"), "years": .number(6), "dives": .number(120)],
                                 home: (51.4425, 3.5736)))
        _ = try register(Account(email: "bob@demo.hereabouts", displayName: "Bob",
                                 attributes: ["certification": .string("OWD"), "years": .number(2), "dives": .number(25)],
                                 home: (51.5000, 3.6100)))
        let operatorAccount = try register(Account(email: operatorEmail, displayName: "Operator"))
        return Seeded(lines: ["bikes@, burgers@, guide@, tips@, ann@, bob@ and operator@demo.hereabouts, password \(password)",
                              "\(operatorEmail) (user \(operatorAccount.user.id)) sees the console's operators' page"],
                      operatorId: operatorAccount.user.id)
    }
}
