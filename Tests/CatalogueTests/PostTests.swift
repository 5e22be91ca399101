import Contracts
import Foundation
import TestThreads
import Testing
import Wire

@Suite("Posts", .ownThread)
struct PostTests {
    @Test("a registered user creates a post with every field, normalised and stored")
    func create() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let draft = PostDraft(kind: "restaurant", title: "Burger Bar", text: "Smash burgers.", lat: 52.09, lon: 5.12,
                              category: "burger", tags: ["Vegan", "halal", "vegan"], price: Price(amount: 12.5, currency: "eur"),
                              hours: "Mo-Sa 11:00-22:00; Su off", timezone: "Europe/Amsterdam",
                              place: PostPlace(city: "Utrecht", countryCode: "nl"), notifyRadius: 150, ref: "feed-17")
        let post = try catalogue.create(draft, token: owner.token)
        #expect(post.ownerId == owner.id)
        #expect(post.version == 1)
        #expect(post.tags == ["Vegan", "halal"])
        #expect(post.price == Price(amount: 12.5, currency: "EUR"))
        #expect(post.place == PostPlace(city: "Utrecht", countryCode: "NL"))
        #expect(post.rating == Rating(average: nil, count: 0))
        #expect(post.images.isEmpty)
        #expect(post.hoursNormalized == "Mo-Sa 11:00-22:00; Su off", "standard hours are their own standard spelling")
        #expect(try catalogue.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post == post)
    }

    @Test("hours in a tolerant form are kept as written, with their standard spelling beside them, on create and update")
    func hoursNormalized() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let post = try catalogue.create(PostDraft(kind: "shop", title: "Corner Shop", lat: 52.09, lon: 5.12, hours: "Mon-Fri 8am-6pm, Sat 10am-2pm",
                                                  timezone: "Europe/Amsterdam"), token: owner.token)
        #expect(post.hours == "Mon-Fri 8am-6pm, Sat 10am-2pm")
        #expect(post.hoursNormalized == "Mo-Fr 08:00-18:00, Sa 10:00-14:00")
        let updated = try catalogue.client.call(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["hours": "montag-freitag 9-17 uhr; PH geschlossen"]),
                                                token: owner.token).post
        #expect(updated.hoursNormalized == "Mo-Fr 09:00-17:00; PH off")
        let cleared = try catalogue.client.call(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["hours": .null]), token: owner.token).post
        #expect(cleared.hours == nil && cleared.hoursNormalized == nil)
        #expect(try catalogue.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post == cleared)
    }

    @Test("anonymous users may not post; callers without a token are unauthenticated")
    func createNeedsRegisteredUser() throws {
        let catalogue = try CatalogueFixture()
        let anonymous = try catalogue.anonymous()
        #expect(catalogue.failure(CatalogueAPI.create, CreatePostRequest(.sample()), token: anonymous.token)?.code == .permissionDenied)
        #expect(catalogue.failure(CatalogueAPI.create, CreatePostRequest(.sample()))?.code == .unauthenticated)
    }

    @Test("drafts that break a rule name the field", arguments: [
        (PostDraft(kind: "Sight", title: "x", lat: 1, lon: 1), "kind"),
        (PostDraft(kind: "s", title: "x", lat: 1, lon: 1), "kind"),
        (PostDraft(kind: "sight", title: "", lat: 1, lon: 1), "title"),
        (PostDraft(kind: "sight", title: String(repeating: "t", count: 201), lat: 1, lon: 1), "title"),
        (PostDraft(kind: "sight", title: "two\nlines", lat: 1, lon: 1), "title"),
        (PostDraft(kind: "sight", title: "x", text: String(repeating: "t", count: 10_001), lat: 1, lon: 1), "text"),
        (PostDraft(kind: "sight", title: "x", lat: 91, lon: 1), "lat"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 181), "lon"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, category: "Hotel Chain"), "category"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, tags: (0..<21).map { "t\($0)" }), "tags"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, tags: ["ok", ""]), "tags[1]"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, price: Price(amount: -1, currency: "EUR")), "price.amount"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, price: Price(amount: 1, currency: "EURO")), "price.currency"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, hours: "Mo-Fr 09:00-17:00"), "timezone"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, hours: "Mo-Fr 09:00-49:00", timezone: "Europe/Berlin"), "hours"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, hours: "Mo-Fr 09:00-17:00", timezone: "Mars/Olympus"), "timezone"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, hours: "24/7", timezone: "GMT+1"), "timezone"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, place: PostPlace(city: "Paris", countryCode: "XX")), "place.countryCode"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, place: PostPlace(city: "", countryCode: "FR")), "place.city"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, notifyRadius: 5), "notifyRadius"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, notifyRadius: 5001), "notifyRadius"),
        (PostDraft(kind: "sight", title: "x", lat: 1, lon: 1, ref: ""), "ref"),
    ])
    func validation(draft: PostDraft, field: String) throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let error = catalogue.failure(CatalogueAPI.create, CreatePostRequest(draft), token: owner.token)
        #expect(error?.summary == "invalid_argument \(field)", "\(error?.message ?? "accepted")")
    }

    @Test("getMany returns posts in the order asked, each once, leaving out unknown ids")
    func getMany() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let a = try catalogue.create(.sample("A"), token: owner.token)
        let b = try catalogue.create(.sample("B"), token: owner.token)
        let posts = try catalogue.client.call(CatalogueAPI.getMany, GetPostsRequest(ids: [b.id, "nope", a.id, b.id])).posts
        #expect(posts.map(\.title) == ["B", "A"])
        #expect(catalogue.failure(CatalogueAPI.getMany, GetPostsRequest(ids: (0...200).map { "p\($0)" }))?.summary == "invalid_argument ids")
        #expect(catalogue.failure(CatalogueAPI.get, IDRequest(id: "missing"))?.code == .notFound)
    }

    @Test("only the owner updates; each change bumps the version; a stale ifVersion is a conflict")
    func update() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let other = try catalogue.user()
        let post = try catalogue.create(.sample(), token: owner.token)

        let edited = try catalogue.client.call(CatalogueAPI.update, UpdatePostRequest(
            id: post.id, ifVersion: 1,
            changes: ["title": "Rijksmuseum Amsterdam", "tags": ["art"], "hours": "Tu-Su 09:00-17:00", "timezone": "Europe/Amsterdam"]),
            token: owner.token).post
        #expect(edited.version == 2)
        #expect(edited.title == "Rijksmuseum Amsterdam")
        #expect(edited.text == post.text)
        #expect(edited.createdAt == post.createdAt)

        let stale = catalogue.failure(CatalogueAPI.update, UpdatePostRequest(id: post.id, ifVersion: 1, changes: ["title": "Old"]),
                                      token: owner.token)
        #expect(stale?.code == .conflict)
        #expect(catalogue.failure(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["title": "Mine"]), token: other.token)?.code == .permissionDenied)
        #expect(catalogue.failure(CatalogueAPI.update, UpdatePostRequest(id: "nope", changes: ["title": "x"]), token: owner.token)?.code == .notFound)
        // Clearing the time zone while hours remain breaks the rule.
        #expect(catalogue.failure(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["timezone": nil]), token: owner.token)?.summary == "invalid_argument timezone")
        #expect(catalogue.failure(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["title": nil]), token: owner.token)?.summary == "invalid_argument title")

        let cleared = try catalogue.client.call(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["tags": nil, "hours": nil]),
                                                token: owner.token).post
        #expect(cleared.tags.isEmpty && cleared.hours == nil && cleared.version == 3)
        // An update that changes nothing makes no new version.
        let same = try catalogue.client.call(CatalogueAPI.update, UpdatePostRequest(id: post.id, changes: ["title": .string(cleared.title)]),
                                             token: owner.token).post
        #expect(same.version == 3)
    }

    @Test("only the owner deletes; the post is gone")
    func delete() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let other = try catalogue.user()
        let post = try catalogue.create(.sample(), token: owner.token)
        #expect(catalogue.failure(CatalogueAPI.delete, IDRequest(id: post.id), token: other.token)?.code == .permissionDenied)
        _ = try catalogue.client.call(CatalogueAPI.delete, IDRequest(id: post.id), token: owner.token)
        #expect(catalogue.failure(CatalogueAPI.get, IDRequest(id: post.id))?.code == .notFound)
        #expect(catalogue.failure(CatalogueAPI.delete, IDRequest(id: post.id), token: owner.token)?.code == .notFound)
    }

    @Test("a ref is used once per owner")
    func refPerOwner() throws {
        let catalogue = try CatalogueFixture()
        let a = try catalogue.user()
        let b = try catalogue.user()
        _ = try catalogue.create(.sample(ref: "r1"), token: a.token)
        #expect(catalogue.failure(CatalogueAPI.create, CreatePostRequest(.sample(ref: "r1")), token: a.token)?.summary == "already_exists ref")
        _ = try catalogue.create(.sample(ref: "r1"), token: b.token)
    }

    @Test("list is newest first with the total of all pages, and filters by owner, kind, category and place")
    func list() throws {
        let catalogue = try CatalogueFixture()
        let provider = try catalogue.user()
        let other = try catalogue.user()
        for index in 0..<37 {
            _ = try catalogue.create(PostDraft(kind: index % 3 == 0 ? "tip" : "offer", title: "Offer \(index)", lat: 50, lon: 4,
                                               category: index % 2 == 0 ? "bike" : nil,
                                               place: PostPlace(city: index % 5 == 0 ? "Köln" : "Bonn", countryCode: "DE")),
                                     token: provider.token)
        }
        _ = try catalogue.create(.sample("Not mine"), token: other.token)

        var seen: [String] = []
        var cursor: String?
        repeat {
            let page = try catalogue.client.call(CatalogueAPI.list, ListPostsRequest(owner: provider.id, limit: 10, cursor: cursor))
            #expect(page.total == 37)
            seen += page.posts.map(\.title)
            cursor = page.nextCursor
        } while cursor != nil
        #expect(seen == (0..<37).reversed().map { "Offer \($0)" })

        #expect(try catalogue.client.call(CatalogueAPI.list, ListPostsRequest(kind: "tip")).total == 13)
        #expect(try catalogue.client.call(CatalogueAPI.list, ListPostsRequest(category: "bike")).total == 19)
        #expect(try catalogue.client.call(CatalogueAPI.list, ListPostsRequest(city: "koln", countryCode: "de")).total == 8)
        #expect(try catalogue.client.call(CatalogueAPI.list, ListPostsRequest()).total == 38)
        #expect(catalogue.failure(CatalogueAPI.list, ListPostsRequest(cursor: "bogus"))?.summary == "invalid_argument cursor")
        #expect(catalogue.failure(CatalogueAPI.list, ListPostsRequest(limit: 101))?.summary == "invalid_argument limit")
    }
}
