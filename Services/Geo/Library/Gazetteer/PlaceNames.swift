import Foundation

/// Every name of every place as a sorted list of search keys, for prefix lookups.
///
/// A key is a name's words joined by one space (`TextTerms.key`),
/// so "'s-Gravenhage", "S Gravenhage" and "s gravenhage" are the same key. Besides
/// each whole name, the name from each later word on is a key too, so "york" finds
/// "New York City" — ranked below names that start with it.
///
/// Keys live in one byte buffer and entries point into it: about 450,000 keys cost
/// no more than their bytes and 12 bytes each, with no String per key.
struct PlaceNames: Sendable {
    /// How well a key matched a query; lower is better.
    enum Quality: Int, Comparable, Sendable {
        case name, alternateName, namePrefix, alternatePrefix, laterWord, laterWordPrefix

        static func < (a: Quality, b: Quality) -> Bool { a.rawValue < b.rawValue }
    }

    /// Where a key came from.
    enum Source: UInt8, Sendable {
        case name, alternateName, laterWord
    }

    private struct Entry: Sendable {
        var offset: UInt32
        var length: UInt16
        var source: Source
        var place: UInt32
    }

    private let bytes: [UInt8]
    private let entries: [Entry]

    /// Collects the keys of the places' names; `names(i)` gives place `i`'s name and
    /// then its alternate names.
    init(placeCount: Int, names: (Int) -> [String]) {
        var bytes: [UInt8] = []
        var entries: [Entry] = []
        bytes.reserveCapacity(placeCount * 120)
        entries.reserveCapacity(placeCount * 14)
        for place in 0..<placeCount {
            for (index, name) in names(place).enumerated() {
                let key = TextTerms.key(name)
                guard !key.isEmpty, key.count <= Int(UInt16.max) else { continue }
                let offset = bytes.count
                bytes.append(contentsOf: key)
                entries.append(Entry(offset: UInt32(offset), length: UInt16(key.count), source: index == 0 ? .name : .alternateName,
                                     place: UInt32(place)))
                // Each later word starts a key of its own, sharing the bytes.
                for i in key.indices.dropFirst() where key[i - 1] == 0x20 {
                    entries.append(Entry(offset: UInt32(offset + i), length: UInt16(key.count - i), source: .laterWord,
                                         place: UInt32(place)))
                }
            }
        }
        self.entries = bytes.withUnsafeBufferPointer { buffer in
            // Each entry beside its key's first eight bytes as one number: most of the
            // sort's comparisons end at the numbers, without reaching for the bytes.
            var sorting = entries.map { (head: Self.head(buffer, $0), entry: $0) }
            sorting.sort { a, b in
                if a.head != b.head { return a.head < b.head }
                let order = Self.compare(buffer, a.entry, buffer.baseAddress! + Int(b.entry.offset), Int(b.entry.length))
                return order != 0 ? order < 0 : (a.entry.place, a.entry.source.rawValue) < (b.entry.place, b.entry.source.rawValue)
            }
            return sorting.map(\.entry)
        }
        self.bytes = bytes
    }

    /// An entry's first eight key bytes, big-endian, zeros past its end. No key holds a
    /// zero byte (a key is letters, digits and spaces), so these order as the keys do
    /// as far as they reach, a shorter key first where one is the other's prefix.
    private static func head(_ buffer: UnsafeBufferPointer<UInt8>, _ entry: Entry) -> UInt64 {
        var head: UInt64 = 0
        for index in 0..<8 {
            head = head << 8 | UInt64(index < Int(entry.length) ? buffer[Int(entry.offset) + index] : 0)
        }
        return head
    }

    var count: Int { entries.count }

    /// Calls `body` with each place that has a key starting with `query`'s key, and
    /// how well that key matched; a place may come more than once.
    func forEachMatch(of query: [UInt8], _ body: (_ place: Int, _ quality: Quality) -> Void) {
        guard !query.isEmpty else { return }
        bytes.withUnsafeBufferPointer { buffer in
            query.withUnsafeBufferPointer { q in
                let qBase = q.baseAddress!, qLength = q.count
                // The first entry not below the query.
                var low = 0, high = entries.count
                while low < high {
                    let mid = (low + high) / 2
                    if Self.compare(buffer, entries[mid], qBase, qLength) < 0 { low = mid + 1 } else { high = mid }
                }
                var index = low
                while index < entries.count {
                    let entry = entries[index]
                    guard Int(entry.length) >= qLength,
                          memcmp(buffer.baseAddress! + Int(entry.offset), qBase, qLength) == 0 else { break }
                    let exact = Int(entry.length) == qLength
                    let quality: Quality = switch entry.source {
                    case .name: exact ? .name : .namePrefix
                    case .alternateName: exact ? .alternateName : .alternatePrefix
                    case .laterWord: exact ? .laterWord : .laterWordPrefix
                    }
                    body(Int(entry.place), quality)
                    index += 1
                }
            }
        }
    }

    /// Byte order of an entry's key against `length` bytes at `other`; a prefix
    /// sorts before what it prefixes.
    @inline(__always)
    private static func compare(_ buffer: UnsafeBufferPointer<UInt8>, _ entry: Entry, _ other: UnsafePointer<UInt8>,
                                _ length: Int) -> Int {
        let own = Int(entry.length)
        let order = memcmp(buffer.baseAddress! + Int(entry.offset), other, min(own, length))
        return order != 0 ? Int(order) : own - length
    }
}
