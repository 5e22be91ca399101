import Contracts
import Foundation
import Testing
import Wire

@Suite("Post JSON")
struct PostJSONTests {
    static let posts: [Post] = [
        Post(id: "p1", ownerId: "u1", kind: "sight", title: "Plain", text: "", lat: 0, lon: 0,
             createdAt: Date(timeIntervalSince1970: 0), updatedAt: Date(timeIntervalSince1970: 0)),
        Post(id: "p2", ownerId: "u2", kind: "restaurant", title: "Café \"Ünïcode\" 🍔\n", text: "Line\nbreak\ttab\\", lat: -33.868820,
             lon: 151.209296, category: "burger", tags: ["vegan", "Halal"], price: Price(amount: 12.5, currency: "EUR"),
             hours: "Mo-Fr 09:00-17:00", timezone: "Europe/Amsterdam", place: PostPlace(city: "Köln", countryCode: "DE"),
             notifyRadius: 150, ref: "feed-1",
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
