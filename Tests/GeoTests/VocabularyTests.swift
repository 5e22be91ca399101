@testable import Geo
import TestThreads
import Testing

@Suite("Vocabulary prefix lookups", .ownThread)
struct VocabularyTests {
    @Test("words found by prefix equal a scan of all words, across merges of recent words into the sorted run")
    func prefixes() {
        var vocabulary = Vocabulary()
        var generator = SystemRandomNumberGenerator()
        let letters = Array("abcdeéz".unicodeScalars)
        var words: [String] = []
        // Enough new words for several merges (4,096 wait at most), checked as they grow.
        for round in 0..<12_000 {
            let length = Int.random(in: 1...6, using: &generator)
            let word = String(String.UnicodeScalarView((0..<length).map { _ in letters.randomElement(using: &generator)! }))
            if vocabulary.id(of: word) == nil { words.append(word) }
            _ = vocabulary.intern(word)
            guard round % 3_000 == 2_999 else { continue }
            for prefix in ["a", "ab", "é", "zé", "abcde", "q", ""] {
                let expected = words.indices.filter { words[$0].utf8.starts(with: prefix.utf8) }
                    .map { vocabulary.id(of: words[$0])! }.sorted()
                #expect(vocabulary.ids(withPrefix: prefix) == expected, "prefix \(prefix) after \(round + 1) words")
            }
        }
    }

    @Test("kept prefix look-ups follow new words, and two copies that took different words never share them")
    func keptLookups() {
        let kept = PrefixExpansions()
        var vocabulary = Vocabulary()
        let bake = vocabulary.intern("bake")
        _ = vocabulary.intern("pizza")
        #expect(kept.ids(withPrefix: "bak", in: vocabulary) == [bake])
        #expect(kept.ids(withPrefix: "bak", in: vocabulary) == [bake])
        let bakery = vocabulary.intern("bakery")
        #expect(kept.ids(withPrefix: "bak", in: vocabulary) == [bake, bakery])
        // A word already known changes nothing.
        _ = vocabulary.intern("pizza")
        #expect(kept.ids(withPrefix: "bak", in: vocabulary) == [bake, bakery])

        // Two copies of one vocabulary give the next word the same id.
        var left = vocabulary, right = vocabulary
        let baker = left.intern("baker")
        let bakes = right.intern("bakes")
        #expect(baker == bakes)
        #expect(kept.ids(withPrefix: "baker", in: left) == [bakery, baker].sorted())
        #expect(kept.ids(withPrefix: "baker", in: right) == [bakery])
        #expect(kept.ids(withPrefix: "bakes", in: right) == [bakes])
        #expect(kept.ids(withPrefix: "bakes", in: left) == [])
        // A vocabulary built anew is another state, even with the same words.
        var rebuilt = Vocabulary()
        let pie = rebuilt.intern("pie")
        #expect(kept.ids(withPrefix: "pi", in: rebuilt) == [pie])
        #expect(kept.ids(withPrefix: "p", in: vocabulary) == [vocabulary.id(of: "pizza")!])

        // Past its capacity it starts over, still answering right.
        for index in 0..<(PrefixExpansions.capacity + 10) {
            #expect(kept.ids(withPrefix: "w\(index)", in: vocabulary) == [])
        }
        #expect(kept.ids(withPrefix: "bak", in: vocabulary) == [bake, bakery])
    }
}

@Suite("A post's word ids", .ownThread)
struct WordIDTests {
    @Test("are kept ascending and each once, as a set would keep them", arguments: [
        [], [7], [3, 3], [5, 1, 5, 2, 1, 9], [4, 3, 2, 1], [1, 1, 1, 1, 2],
    ] as [[UInt32]])
    func sortedUnique(ids: [UInt32]) {
        #expect(PostIndex.sortedUnique(ids) == Set(ids).sorted())
    }
}
