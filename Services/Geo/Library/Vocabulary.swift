import Foundation

/// The words of all indexed posts, each with an id and its posting list (the slots
/// of the posts that hold it, in the order they were indexed; slots of posts since
/// removed stay until the index is rebuilt, and readers skip them).
struct Vocabulary: Sendable {
    private var ids: [String: UInt32] = [:]
    private(set) var words: [String] = []
    private(set) var postings: [[Int32]] = []
    /// Word ids ordered by the words' UTF-8 bytes, for prefix lookups; words added
    /// since the last merge wait in `unsorted`, which lookups scan.
    private var sorted: [UInt32] = []
    private var unsorted: [UInt32] = []
    /// How many words may wait unsorted: few while serving, as every prefix lookup
    /// scans them; unlimited while loading, which sorts once at the end.
    private var unsortedLimit = Self.servingLimit
    private static let servingLimit = 256

    func id(of word: String) -> UInt32? { ids[word] }

    /// The id of `word`, added if new.
    mutating func intern(_ word: String) -> UInt32 {
        if let id = ids[word] { return id }
        let id = UInt32(words.count)
        ids[word] = id
        words.append(word)
        postings.append([])
        unsorted.append(id)
        if unsorted.count > unsortedLimit { mergeUnsorted() }
        return id
    }

    mutating func post(_ slot: Int32, to id: UInt32) {
        postings[Int(id)].append(slot)
    }

    /// While loading, new words are sorted once at `endLoading`.
    mutating func beginLoading() { unsortedLimit = .max }

    mutating func endLoading() {
        unsortedLimit = Self.servingLimit
        mergeUnsorted()
    }

    /// Ids of the words that start with `prefix`, ascending.
    func ids(withPrefix prefix: String) -> [UInt32] {
        var found: [UInt32] = []
        // The first sorted word not below the prefix; every match follows it.
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if Self.compare(words[Int(sorted[middle])], prefix, prefixOnly: false) < 0 { low = middle + 1 } else { high = middle }
        }
        while low < sorted.count, Self.compare(words[Int(sorted[low])], prefix, prefixOnly: true) == 0 {
            found.append(sorted[low])
            low += 1
        }
        for id in unsorted where Self.compare(words[Int(id)], prefix, prefixOnly: true) == 0 { found.append(id) }
        return found.sorted()
    }

    var memoryBytes: Int {
        words.reduce(0) { $0 + 48 + $1.utf8.count } + postings.reduce(0) { $0 + 32 + $1.capacity * 4 }
            + (sorted.count + unsorted.count) * 4
    }

    /// Sorts the waiting words and merges them into `sorted`.
    private mutating func mergeUnsorted() {
        guard !unsorted.isEmpty else { return }
        let words = self.words
        let before = { (a: UInt32, b: UInt32) in Self.compare(words[Int(a)], words[Int(b)], prefixOnly: false) < 0 }
        unsorted.sort(by: before)
        var merged: [UInt32] = []
        merged.reserveCapacity(sorted.count + unsorted.count)
        var i = 0, j = 0
        while i < sorted.count, j < unsorted.count {
            if before(unsorted[j], sorted[i]) {
                merged.append(unsorted[j]); j += 1
            } else {
                merged.append(sorted[i]); i += 1
            }
        }
        merged.append(contentsOf: sorted[i...])
        merged.append(contentsOf: unsorted[j...])
        sorted = merged
        unsorted.removeAll()
    }

    /// Byte order of `word` against `other`; with `prefixOnly`, 0 when `word` starts
    /// with `other`. Bytes, not `String`'s Unicode order: words are already folded,
    /// and a byte compare is what keeps a lookup cheap.
    @inline(__always)
    private static func compare(_ word: String, _ other: String, prefixOnly: Bool) -> Int {
        let result = word.utf8.withContiguousStorageIfAvailable { a in
            other.utf8.withContiguousStorageIfAvailable { b -> Int in
                if prefixOnly {
                    guard a.count >= b.count else { return -1 }
                    return b.isEmpty ? 0 : Int(memcmp(a.baseAddress!, b.baseAddress!, b.count))
                }
                let order = a.isEmpty || b.isEmpty ? 0 : Int(memcmp(a.baseAddress!, b.baseAddress!, min(a.count, b.count)))
                return order != 0 ? order : a.count - b.count
            }
        }
        if let result, let result { return result }
        // Strings without contiguous UTF-8 (bridged ones) take the slow road.
        if prefixOnly { return word.utf8.starts(with: other.utf8) ? 0 : -1 }
        return word.utf8.lexicographicallyPrecedes(other.utf8) ? -1 : (word == other ? 0 : 1)
    }
}
