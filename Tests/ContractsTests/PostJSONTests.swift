import Contracts
import Foundation
import Testing
import Wire

@Suite("Post JSON")
struct PostJSONTests {
    static let posts: [Post] = [
        Post(id: "p1", ownerId: "u1", draft: PostDraft(kind: "sight", title: "Plain", lat: 0, lon: 0),
             createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0)),
        Post(id: "p2", ownerId: "u2",
             draft: PostDraft(kind: "restaurant", title: "Café \"Ünïcode\" 🍔\n", text: "Line\nbreak\ttab\\", lat: -33.868820,
                              lon: 151.209296, category: "burger", tags: ["vegan", "Halal"], price: Price(amount: 12.5, currency: "EUR"),
                              hours: "Mo-Fr 09:00-17:00", timezone: "Europe/Amsterdam", place: PostPlace(city: "Köln", countryCode: "DE"),
                              notifyRadius: 150, ref: "feed-1"),
             images: [PostImage(id: "i1", contentType: "image/png", width: 40, height: 30, bytes: 1234)],
             rating: Rating(sum: 7, count: 3), version: 5,
             createdAt: Date(timeIntervalSince1970: 1_795_341_600), updatedAt: Date(timeIntervalSince1970: 1_795_341_661.5)),
    ]

    @Test("the hand-written writer gives exactly the Codable encoding", arguments: posts)
    func sameAsCodable(post: Post) throws {
        let codable = try JSONValueEncoder().encodeData(post)
        #expect(String(decoding: post.jsonBytes, as: UTF8.self) == String(decoding: codable, as: UTF8.self))
        #expect(try JSONValueDecoder().decode(Post.self, from: Data(post.jsonBytes)).id == post.id)
    }

    @Test("ratings average to two decimals and are null while unrated")
    func ratings() {
        #expect(Rating(sum: 7, count: 3).average == 2.33)
        #expect(Rating(sum: 0, count: 0).average == nil)
    }
}

@Suite("Calendar dates")
struct LocalDateTests {
    @Test("reads and writes YYYY-MM-DD, refusing dates that do not exist", arguments: [
        ("2027-04-02", true), ("2024-02-29", true), ("2023-02-29", false), ("2027-13-01", false),
        ("2027-4-2", false), ("27-04-02", false), ("2027/04/02", false), ("", false),
    ])
    func dates(text: String, valid: Bool) {
        #expect((LocalDate(text) != nil) == valid)
        if valid { #expect(LocalDate(text)?.description == text) }
    }
}

@Suite("Post updates")
struct PostUpdateTests {
    static let plain = PostDraft(kind: "sight", title: "Plain", lat: 0, lon: 0)
    static let full = PostJSONTests.posts[1].draft

    @Test("every field of a draft can be set by an update; the required ones cannot be cleared", arguments: PostDraft.Field.allCases)
    func everyField(field: PostDraft.Field) throws {
        let value = try #require(try JSONValueEncoder().encode(Self.full).objectValue?[field.stringValue])
        let set = try UpdatePostRequest(id: "p1", changes: [field.stringValue: value]).applied(to: Self.plain)
        #expect(try JSONValueEncoder().encode(set).objectValue?[field.stringValue] == value)

        let clearing = UpdatePostRequest(id: "p1", changes: [field.stringValue: nil])
        let required: Set<PostDraft.Field> = [.kind, .title, .lat, .lon]
        if required.contains(field) {
            #expect(throws: ServiceError.self) { try clearing.applied(to: Self.full) }
        } else {
            let cleared = try clearing.applied(to: Self.full)
            #expect(cleared != Self.full)
            #expect(try JSONValueEncoder().encode(cleared).objectValue?[field.stringValue] ?? .null == (field == .text ? "" : field == .tags ? [] : .null))
        }
    }

    @Test("an update keeps the draft's fields only, and a wrong type names its field")
    func wire() throws {
        let request = try JSONValueDecoder().decode(UpdatePostRequest.self, from: Data(#"{"id":"p1","ifVersion":2,"title":"New","colour":"red","hours":null}"#.utf8))
        #expect(request.changes == ["title": "New", "hours": nil])
        #expect(request.ifVersion == 2)
        let wrong = UpdatePostRequest(id: "p1", changes: ["lat": "north"])
        #expect(throws: ServiceError.invalidArgument(field: "lat", "lat must be a number, not a string")) { try wrong.validate() }
    }
}
