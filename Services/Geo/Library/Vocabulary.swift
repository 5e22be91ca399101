import Foundation
import Synchronization

/// The words of all indexed posts, each with an id and its posting list (the slots
/// of the posts that hold it, ascending; slots of posts since
/// removed stay until the index is compacted, and readers skip them).
struct Vocabulary: Sendable {
    private var ids: [String: UInt32] = [:]
    private(set) var words: [String] = []
    private(set) var postings: [[Int32]] = []
    /// Word ids ordered by the words' UTF-8 bytes, for prefix lookups, in two runs:
    /// `recent` takes each new word in its place (a small array, so inserting is a
    /// short move) and is merged into `sorted` when it fills, so neither a stream of
    /// new words nor a lookup ever walks more than it must.
    private var sorted: [UInt32] = []
    private var recent: [UInt32] = []
    private static let recentLimit = 4096
    /// Names this vocabulary's set of words: a new word, or another vocabulary, has
    /// another state (copies share one until either takes a new word), so prefix
    /// look-ups kept for one state (`PrefixExpansions`) are never used with another.
    private(set) var state = Vocabulary.newState()
    private static let states = Atomic<UInt64>(0)

    private static func newState() -> UInt64 {
        states.wrappingAdd(1, ordering: .relaxed).newValue
    }

    func id(of word: String) -> UInt32? { ids[word] }

    /// The id of `word`, added if new.
    mutating func intern(_ word: String) -> UInt32 {
        if let id = ids[word] { return id }
        let id = UInt32(words.count)
        ids[word] = id
        words.append(word)
        state = Self.newState()
        postings.append([])
        recent.insert(id, at: Self.firstIndex(in: recent, notBelow: word, words: words))
        if recent.count > Self.recentLimit { mergeRecent() }
        return id
    }

    mutating func post(_ slot: Int32, to id: UInt32) {
        postings[Int(id)].append(slot)
    }

    /// Gives every posting its post's new slot (the posts were laid out anew), each
    /// list again in ascending slot order.
    mutating func renumberPostings(_ newSlot: (Int32) -> Int32) {
        for id in postings.indices {
            postings[id].withUnsafeMutableBufferPointer { list in
                for index in list.indices { list[index] = newSlot(list[index]) }
                list.sort()
            }
        }
    }

    /// Empties every posting list, keeping the words and their ids (for a rebuild
    /// of the postings from live posts only).
    mutating func removePostings() {
        postings = [[Int32]](repeating: [], count: postings.count)
    }

    /// Ids of the words that start with `prefix`, ascending.
    func ids(withPrefix prefix: String) -> [UInt32] {
        var found: [UInt32] = []
        func collect(_ run: [UInt32]) {
            // The first word not below the prefix; every match follows it.
            var index = Self.firstIndex(in: run, notBelow: prefix, words: words)
            while index < run.count, Self.compare(words[Int(run[index])], prefix, prefixOnly: true) == 0 {
                found.append(run[index])
                index += 1
            }
        }
        collect(sorted)
        collect(recent)
        return found.sorted()
    }

    private static func firstIndex(in run: [UInt32], notBelow word: String, words: [String]) -> Int {
        var low = 0, high = run.count
        while low < high {
            let middle = (low + high) / 2
            if compare(words[Int(run[middle])], word, prefixOnly: false) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    var memoryBytes: Int {
        words.reduce(0) { $0 + 48 + $1.utf8.count } + postings.reduce(0) { $0 + 32 + $1.capacity * 4 }
            + (sorted.count + recent.count) * 4
    }

    /// Merges `recent` into `sorted`.
    private mutating func mergeRecent() {
        let words = self.words
        let before = { (a: UInt32, b: UInt32) in Self.compare(words[Int(a)], words[Int(b)], prefixOnly: false) < 0 }
        var merged: [UInt32] = []
        merged.reserveCapacity(sorted.count + recent.count)
        var i = 0, j = 0
        while i < sorted.count, j < recent.count {
            if before(recent[j], sorted[i]) {
                merged.append(recent[j]); j += 1
            } else {
                merged.append(sorted[i]); i += 1
            }
        }
        merged.append(contentsOf: sorted[i...])
        merged.append(contentsOf: recent[j...])
        sorted = merged
        recent.removeAll(keepingCapacity: true)
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

/// Recent prefix look-ups: a handful of terms make up most searches, and a look-up
/// is a binary search through every word of the index (a cache miss or two per
/// step: ~3% of a search's time). Kept for one state of the vocabulary only.
final class PrefixExpansions: Sendable {
    private struct Kept {
        var state: UInt64 = 0
        var ids: [String: [UInt32]] = [:]
    }

    private let kept = Mutex(Kept())
    /// Past this many prefixes the kept ones are dropped and kept anew.
    static let capacity = 1_024

    /// `vocabulary.ids(withPrefix:)`, from the kept look-ups when they hold it.
    func ids(withPrefix prefix: String, in vocabulary: Vocabulary) -> [UInt32] {
        let state = vocabulary.state
        if let ids = kept.withLock({ $0.state == state ? $0.ids[prefix] : nil }) { return ids }
        let ids = vocabulary.ids(withPrefix: prefix)
        kept.withLock { kept in
            if kept.state != state || kept.ids.count >= Self.capacity { kept = Kept(state: state) }
            kept.ids[prefix] = ids
        }
        return ids
    }
}

extension Vocabulary {
    /// Words, postings and the prefix order, for an index snapshot.
    func write(to writer: SnapshotWriter) {
        writer.write(strings: words)
        writer.write(nested: postings)
        writer.write(array: sorted)
        writer.write(array: recent)
    }

    /// A vocabulary as `write` wrote it, in a state of its own.
    init(from reader: inout SnapshotReader) throws {
        self.init()
        words = try reader.strings()
        postings = try reader.nested()
        sorted = try reader.array()
        recent = try reader.array()
        guard postings.count == words.count, sorted.count + recent.count == words.count,
              sorted.allSatisfy({ Int($0) < words.count }), recent.allSatisfy({ Int($0) < words.count }) else {
            throw IndexSnapshot.Unreadable(description: "the vocabulary is malformed")
        }
        ids.reserveCapacity(words.count)
        for (id, word) in words.enumerated() { ids[word] = UInt32(id) }
    }
}
