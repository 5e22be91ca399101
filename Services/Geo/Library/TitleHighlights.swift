import Wire

/// Where a query's words are in a title: the `highlights` of a hit.
///
/// A title's words are found as `TextTerms` finds them (folded, split at anything
/// that is not a letter or a digit), and each is marked where the search would match
/// it: equal to one of the query's words, or starting with its last word (which a
/// search takes as a prefix, as the user may still be typing it). A range is counted
/// in UTF-16 code units of the title as returned, what JavaScript's strings and
/// `NSRange` count, and covers whole characters of the original title: the accents
/// that follow a letter as combining marks are part of its word.
struct TitleHighlights: Sendable {
    /// The query's words but the last, folded; a title word must equal one.
    private let words: [[UInt8]]
    /// The last word, folded; a title word must start with it.
    private let prefix: [UInt8]

    /// Nil for a query without words (`TextTerms.words`), whose hits carry no highlights.
    init?(queryWords: [String]) {
        let words = queryWords.map { Array($0.utf8) }
        guard let last = words.last else { return nil }
        self.words = Array(words.dropLast())
        prefix = last
    }

    /// The ranges (UTF-16 start and length) of `title`'s words the query matches, in
    /// order; `title` is UTF-8.
    func ranges(in title: UnsafeBufferPointer<UInt8>) -> [(start: Int, length: Int)] {
        var ranges: [(start: Int, length: Int)] = []
        if title.allSatisfy({ $0 < 0x80 }) {
            // ASCII, nearly every title: a byte is a UTF-16 unit and folds on its own.
            var start = -1
            for index in 0...title.count {
                let isWord = index < title.count && Self.isASCIIWordByte(title[index])
                if isWord, start < 0 { start = index }
                if !isWord, start >= 0 {
                    if matchesASCII(UnsafeBufferPointer(rebasing: title[start..<index])) {
                        ranges.append((start, index - start))
                    }
                    start = -1
                }
            }
            return ranges
        }
        var word: [UInt8] = []
        var start = 0, end = 0
        var offset = 0
        func flush() {
            if !word.isEmpty, matches(word) { ranges.append((start, end - start)) }
            word.removeAll(keepingCapacity: true)
        }
        for scalar in String(decoding: title, as: UTF8.self).unicodeScalars {
            let width = scalar.utf16.count
            let folded = TextTerms.fold(scalar)
            if folded.isEmpty {
                // A combining mark: part of the word it follows.
                if !word.isEmpty { end = offset + width }
            } else {
                for character in String(decoding: folded, as: UTF8.self).unicodeScalars {
                    if TextTerms.isWordCharacter(character) {
                        if word.isEmpty { start = offset }
                        word.append(contentsOf: character.utf8)
                        end = offset + width
                    } else {
                        flush()
                    }
                }
            }
            offset += width
        }
        flush()
        return ranges
    }

    @inline(__always)
    private static func isASCIIWordByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x30 && byte <= 0x39)
    }

    /// Whether an ASCII word (any case) matches, folded as it is compared.
    private func matchesASCII(_ word: UnsafeBufferPointer<UInt8>) -> Bool {
        func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte }
        func equal(_ term: [UInt8], upTo count: Int) -> Bool {
            for index in 0..<count where term[index] != lower(word[index]) { return false }
            return true
        }
        if prefix.count <= word.count, equal(prefix, upTo: prefix.count) { return true }
        return words.contains { $0.count == word.count && equal($0, upTo: word.count) }
    }

    private func matches(_ word: [UInt8]) -> Bool {
        word.starts(with: prefix) || words.contains(word)
    }
}

extension JSONWriter {
    /// `{"title":[{"start":…,"length":…},…]}`.
    mutating func write(titleHighlights ranges: [(start: Int, length: Int)]) {
        appendASCII("{\"title\":[")
        for (index, range) in ranges.enumerated() {
            appendASCII(index == 0 ? "{\"start\":" : ",{\"start\":")
            write(Int64(range.start))
            appendASCII(",\"length\":")
            write(Int64(range.length))
            appendASCII("}")
        }
        appendASCII("]}")
    }
}
