import Contracts
import Foundation
@testable import Geo
import ServiceKitTesting
import TestThreads
import Testing

/// Highlights (where a query's words are in a hit's title) against a brute-force
/// matcher, and as a client sees them through the socket.
@Suite("Search highlights", .ownThread)
struct HighlightTests {
    /// Pieces of random titles: words in any case, accents precomposed and as
    /// combining marks, marks on their own, emoji of one and of many scalars, other
    /// scripts, digits, punctuation.
    static let pieces = [
        "Burger", "BURGER", "burgers", "Bar", "bar", "Café", "CAFÉ", "Cafe\u{301}", "cafe", "Köln", "Ko\u{308}ln", "KOELN",
        "Straße", "École", "e\u{301}", "\u{301}", "\u{308}", "🍔", "👍🏽", "👨‍👩‍👧", "🇳🇱", "東京", "寿司", "كولن", "Ελλάδα",
        "24", "٣", "x", "Ü", " ", " ", "-", "'", ",", "&", "·", "(", ")",
    ]

    @Test("ranges equal a brute-force matcher's over random titles with accents, emoji and combining marks, for words and prefixes")
    func againstBruteForce() throws {
        var random = SeededRandom(state: 0x6869_6768)
        for round in 0..<4_000 {
            let title = (0..<Int.random(in: 1...9, using: &random)).map { _ in Self.pieces.randomElement(using: &random)! }.joined()
            let words = TextTerms.words(title)
            let query = Self.query(for: words, using: &random)
            guard let highlights = TitleHighlights(queryWords: TextTerms.words(query)) else { continue }
            let found = Array(title.utf8).withUnsafeBufferPointer { highlights.ranges(in: $0) }.map { TextRange(start: $0.start, length: $0.length) }
            let expected = Self.bruteForce(title: title, query: ReferenceText.words(query))
            #expect(found == expected.ranges, "round \(round): \"\(title)\" for \"\(query)\"")
            #expect(expected.words == words, "the brute force's words are the matcher's, for \"\(title)\"")
            for range in found {
                // Each range is a whole word of the title as JavaScript and NSString cut it.
                let cut = (title as NSString).substring(with: NSRange(location: range.start, length: range.length))
                #expect(TextTerms.words(cut).count == 1, "\"\(cut)\" of \"\(title)\"")
                #expect(range.range(in: title).map { String(title[$0]) } == cut)
            }
        }
    }

    /// One to three words: the title's own (in another case or with accents
    /// dropped), a prefix of one as the last, or words it lacks.
    static func query(for words: [String], using random: inout SeededRandom) -> String {
        (0..<Int.random(in: 1...3, using: &random)).map { _ in
            guard let word = words.randomElement(using: &random), Int.random(in: 0..<5, using: &random) > 0 else {
                return ["pizza", "b", "caf", "東", "kö"].randomElement(using: &random)!
            }
            let scalars = Array(word.unicodeScalars)
            let kept = Bool.random(using: &random) ? scalars.count : Int.random(in: 1...scalars.count, using: &random)
            let text = String(String.UnicodeScalarView(scalars.prefix(kept)))
            return Bool.random(using: &random) ? text.uppercased() : text
        }.joined(separator: Bool.random(using: &random) ? " " : ", ")
    }

    /// Every stretch of the title's scalars that is a whole word, found by trying
    /// every start and end: its fold is all letters and digits, it starts with a
    /// scalar that folds to something, nothing before it folds to a letter or digit
    /// just before it, and what follows folds to something that is neither (marks
    /// that fold to nothing belong to the word before them). A word is marked when
    /// it equals a query word but the last, or starts with the last.
    static func bruteForce(title: String, query: [String]) -> (ranges: [TextRange], words: [String]) {
        let scalars = Array(title.unicodeScalars)
        // Folded by the reference (Foundation's folding), not geo's own `TextTerms`.
        let folds = scalars.map { ReferenceText.fold(String($0)) }
        func isWord(_ scalar: Unicode.Scalar) -> Bool { scalar.properties.isAlphabetic || scalar.properties.numericType != nil }
        func utf16(_ range: Range<Int>) -> Int { scalars[range].reduce(0) { $0 + $1.utf16.count } }
        var ranges: [TextRange] = [], words: [String] = []
        for start in scalars.indices where !folds[start].isEmpty {
            let before = ReferenceText.fold(String(String.UnicodeScalarView(scalars[..<start])))
            guard before.unicodeScalars.last.map({ !isWord($0) }) ?? true else { continue }
            for end in (start + 1)...scalars.count {
                let word = ReferenceText.fold(String(String.UnicodeScalarView(scalars[start..<end])))
                guard !word.isEmpty, word.unicodeScalars.allSatisfy(isWord) else { break }
                guard end == scalars.count || folds[end].unicodeScalars.first.map({ !isWord($0) }) == true else { continue }
                words.append(word)
                if query.dropLast().contains(word) || word.hasPrefix(query.last!) {
                    ranges.append(TextRange(start: utf16(0..<start), length: utf16(start..<end)))
                }
            }
        }
        return (ranges, words)
    }

    @Test("over the socket, geo.search and geo.within hits carry their titles' highlights; none without q or with highlight false")
    func overTheSocket() throws {
        let geo = try GeoFixture()
        let owner = try geo.user()
        let centre = (lat: 52.0907, lon: 5.1214)
        for (index, title) in ["Café Köln am Dom", "Kölsch & Burger 🍔 Bar", "Burgerbar Ko\u{308}lle", "Pizza"].enumerated() {
            _ = try geo.create(PostDraft(kind: "restaurant", title: title, text: index == 3 ? "near Köln" : "",
                                         lat: centre.lat + Double(index) * 0.001, lon: centre.lon), token: owner.token)
        }
        try geo.catchUp()
        func highlighted(_ q: String?, highlight: Bool? = nil) throws -> [String: [TextRange]?] {
            let reply = try geo.client.call(GeoAPI.search, SearchRequest(lat: centre.lat, lon: centre.lon, radius: 2_000, q: q,
                                                                         highlight: highlight))
            return Dictionary(uniqueKeysWithValues: reply.hits.map { ($0.title, $0.highlights?.title) })
        }
        #expect(try highlighted("kö") == ["Café Köln am Dom": [TextRange(start: 5, length: 4)],
                                          "Kölsch & Burger 🍔 Bar": [TextRange(start: 0, length: 6)],
                                          "Burgerbar Ko\u{308}lle": [TextRange(start: 10, length: 6)], "Pizza": []])
        // A word matched in the text alone marks nothing in the title.
        #expect(try highlighted("koln") == ["Café Köln am Dom": [TextRange(start: 5, length: 4)], "Pizza": []])
        // Whole words before the last, the emoji counted as the two UTF-16 units it is.
        #expect(try highlighted("burger ba") == ["Kölsch & Burger 🍔 Bar": [TextRange(start: 9, length: 6), TextRange(start: 19, length: 3)]])
        #expect(try highlighted(nil).values.allSatisfy { $0 == nil })
        #expect(try highlighted("kö", highlight: false).values.allSatisfy { $0 == nil })
        let within = try geo.client.call(GeoAPI.within, WithinRequest(minLat: 52, minLon: 5, maxLat: 52.2, maxLon: 5.2, q: "cafe"))
        #expect(within.hits.map { $0.highlights?.title } == [[TextRange(start: 0, length: 4)]])
    }
}
