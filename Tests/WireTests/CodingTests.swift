import Foundation
import Testing
@testable import Wire

private struct Post: Codable, Equatable {
    var title: String
    var lat: Double
    var limit: Int?
    var tags: [String]
    var created: Date?
}

private struct Import: Codable {
    var posts: [Post]
}

@Suite("Decoding bodies with field paths")
struct CodingTests {
    private func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        try JSONValueDecoder().decode(type, from: Data(text.utf8))
    }

    private func fieldError<T: Decodable>(_ type: T.Type, _ text: String) -> ServiceError? {
        do { _ = try decode(type, text); return nil } catch { return error as? ServiceError }
    }

    @Test("round-trips a value through the encoder and decoder")
    func roundTrip() throws {
        let post = Post(title: "Café", lat: 52.1, limit: 3, tags: ["a"], created: Date(timeIntervalSince1970: 1_795_000_000))
        let data = try JSONValueEncoder().encodeData(post)
        #expect(try JSONValueDecoder().decode(Post.self, from: data) == post)
        #expect(String(decoding: data, as: UTF8.self).contains("\"created\":\"2026-11-18T"))
    }

    @Test("a missing field names itself")
    func missingField() {
        let error = fieldError(Post.self, #"{"lat":1,"tags":[]}"#)
        #expect(error?.code == .invalidArgument)
        #expect(error?.field == "title")
        #expect(error?.message == "title is required")
    }

    @Test("a mistyped field says what it should be")
    func mistypedField() {
        let error = fieldError(Post.self, #"{"title":"t","lat":"north","tags":[]}"#)
        #expect(error?.field == "lat")
        #expect(error?.message == "lat must be a number, not a string")
    }

    @Test("a fraction for an integer field is invalid_argument with the field, not a parse error")
    func fractionForInteger() {
        let error = fieldError(Post.self, #"{"title":"t","lat":1,"limit":3.5,"tags":[]}"#)
        #expect(error?.code == .invalidArgument)
        #expect(error?.field == "limit")
        #expect(error?.message == "limit must be a whole number")
        #expect(fieldError(Post.self, #"{"title":"t","lat":1,"limit":3.0,"tags":[]}"#) == nil)
    }

    @Test("numbers out of range name their field", arguments: [
        (#"{"title":"t","lat":1e400,"tags":[]}"#, "lat"),
        (#"{"title":"t","lat":1,"limit":99999999999999999999,"tags":[]}"#, "limit"),
    ])
    func outOfRange(text: String, field: String) {
        let error = fieldError(Post.self, text)
        #expect(error?.field == field)
        #expect(error?.message == "\(field) is out of range")
    }

    @Test("paths inside arrays read like posts[1].tags[0]")
    func nestedPaths() {
        let text = #"{"posts":[{"title":"a","lat":1,"tags":[]},{"title":"b","lat":1,"tags":[7]}]}"#
        let error = fieldError(Import.self, text)
        #expect(error?.field == "posts[1].tags[0]")
    }

    @Test("unknown fields are ignored")
    func unknownFieldsIgnored() throws {
        let post = try decode(Post.self, #"{"title":"t","lat":1,"tags":[],"extra":{"deep":[1,2]}}"#)
        #expect(post.title == "t")
    }

    @Test("null for an optional field reads as absent; for a required one as missing")
    func nulls() throws {
        #expect(try decode(Post.self, #"{"title":"t","lat":1,"tags":[],"limit":null}"#).limit == nil)
        #expect(fieldError(Post.self, #"{"title":null,"lat":1,"tags":[]}"#)?.message == "title is required")
    }
}

@Suite("RFC 3339 instants")
struct TimestampTests {
    @Test("formats UTC with whole seconds")
    func formats() {
        #expect(Timestamp.format(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: 1_795_305_600.9)) == "2026-11-22T00:00:00Z")
        #expect(Timestamp.format(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
    }

    @Test("reads fractions and offsets", arguments: [
        ("2026-11-22T10:00:00Z", 1_795_341_600.0),
        ("2026-11-22T10:00:00.5Z", 1_795_341_600.5),
        ("2026-11-22T11:00:00+01:00", 1_795_341_600.0),
        ("2026-11-22t10:00:00z", 1_795_341_600.0),
    ])
    func reads(text: String, seconds: Double) {
        #expect(Timestamp.parse(text)?.timeIntervalSince1970 == seconds)
    }

    @Test("refuses what is not an RFC 3339 instant", arguments: [
        "2026-11-22", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-22T10:00:00",
        "2026-11-22 10:00:00Z", "2026-11-22T25:00:00Z", "2026-11-22T10:00:00.Z", "x",
    ])
    func refuses(text: String) {
        #expect(Timestamp.parse(text) == nil)
    }
}
