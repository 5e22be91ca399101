/// The words of all indexed posts, each with an id and its posting list (the slots
/// of the posts that hold it, in the order they were indexed; slots of posts since
/// removed stay until the index is rebuilt, and readers skip them).
struct Vocabulary: Sendable {
    private var ids: [String: UInt32] = [:]
    private(set) var words: [String] = []
    private(set) var postings: [[Int32]] = []
    /// Word ids ordered by word, for prefix lookups; words added since the last sort
    /// wait in `unsorted`, which lookups scan.
    private var sorted: [UInt32] = []
    private var unsorted: [UInt32] = []

    func id(of word: String) -> UInt32? { ids[word] }

    /// The id of `word`, added if new.
    mutating func intern(_ word: String) -> UInt32 {
        if let id = ids[word] { return id }
        let id = UInt32(words.count)
        ids[word] = id
        words.append(word)
        postings.append([])
        unsorted.append(id)
        if unsorted.count > 4096 { sortWords() }
        return id
    }

    mutating func post(_ slot: Int32, to id: UInt32) {
        postings[Int(id)].append(slot)
    }

    /// Ids of the words that start with `prefix`, ascending.
    func ids(withPrefix prefix: String) -> [UInt32] {
        var found: [UInt32] = []
        // The first sorted word not below the prefix; every match follows it.
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if words[Int(sorted[middle])] < prefix { low = middle + 1 } else { high = middle }
        }
        while low < sorted.count, words[Int(sorted[low])].hasPrefix(prefix) {
            found.append(sorted[low])
            low += 1
        }
        for id in unsorted where words[Int(id)].hasPrefix(prefix) { found.append(id) }
        return found.sorted()
    }

    var memoryBytes: Int {
        words.reduce(0) { $0 + 48 + $1.utf8.count } + postings.reduce(0) { $0 + 32 + $1.capacity * 4 }
            + (sorted.count + unsorted.count) * 4
    }

    private mutating func sortWords() {
        sorted.append(contentsOf: unsorted)
        unsorted.removeAll()
        let words = self.words
        sorted.sort { words[Int($0)] < words[Int($1)] }
    }
}
