import Foundation
import OpeningHours

/// A `PostQuery` resolved against one index's word, tag and kind ids, for one search
/// (it caches each opening-hours schedule's status at the query's instant).
struct Matcher {
    /// Ids of the kinds asked for; nil for any.
    private var kinds: [UInt32]?
    /// Each group is one query word: a post must hold one of the group's word ids.
    private var groups: [[UInt32]] = []
    /// Each group's `WordSignature`: a post whose signature shares no bit with one
    /// of them holds none of that group's words.
    private var groupSignatures: [UInt32] = []
    /// Tag ids a post must all hold.
    private var tags: [UInt32] = []
    private let openNow: Bool
    private let at: Date
    /// Where the query's words are in a hit's title; nil without words or when not asked.
    let highlights: TitleHighlights?
    /// True when a word, tag or kind asked for is in no post at all.
    private(set) var matchesNothing = false
    private var statuses: [UInt32: OpenStatus] = [:]
    private var states: [UInt32: OpeningState] = [:]
    private let schedules: [PostIndex.Schedule?]
    private let index: PostIndex
    private let terms: Arena<UInt32>
    private let postings: [[Int32]]

    init(_ query: PostQuery, index: PostIndex) {
        openNow = query.openNow
        at = query.at
        let words = TextTerms.words(query.q ?? "")
        highlights = query.highlight ? TitleHighlights(queryWords: words) : nil
        schedules = index.schedules
        self.index = index
        terms = index.terms
        postings = index.vocabulary.postings
        if let kinds = query.kinds, !kinds.isEmpty {
            let ids = kinds.compactMap { index.kindIDs[$0] }
            if ids.isEmpty { matchesNothing = true }
            self.kinds = ids
        }
        for (position, word) in words.enumerated() {
            // The last word may be the start of a longer one (typing "burg").
            let ids = position == words.count - 1 ? index.prefixExpansions.ids(withPrefix: word, in: index.vocabulary) : index.vocabulary.id(of: word).map { [$0] } ?? []
            if ids.isEmpty { matchesNothing = true }
            groups.append(ids)
            groupSignatures.append(WordSignature.of(ids))
        }
        for tag in query.tags ?? [] {
            guard let id = index.tagIDs[PostIndex.tagKey(tag)] else {
                matchesNothing = true
                continue
            }
            tags.append(id)
        }
    }

    /// False when a post with this `WordSignature` surely lacks a query word: a
    /// check on the tree point alone, before the post's record is read.
    @inline(__always)
    func mayMatch(words signature: UInt32) -> Bool {
        for group in groupSignatures where signature & group == 0 { return false }
        return true
    }

    mutating func matches(_ record: PostRecord) -> Bool {
        if let kinds, !kinds.contains(record.kind) { return false }
        if !groups.isEmpty || !tags.isEmpty {
            let held = terms.withElements(record.terms) { terms in
                let words = UnsafeBufferPointer(rebasing: terms[0..<(terms.count - Int(record.tagCount))])
                let tagIDs = UnsafeBufferPointer(rebasing: terms[(terms.count - Int(record.tagCount))...])
                for group in groups where !Self.intersects(group, words) { return false }
                for tag in tags where !Self.contains(tagIDs, tag) { return false }
                return true
            }
            if !held { return false }
        }
        if openNow {
            guard let status = status(of: record), status == .open || status == .closesSoon else { return false }
        }
        return true
    }

    /// The post's status at the query's instant (all `openNow` needs); nil without hours.
    mutating func status(of record: PostRecord) -> OpenStatus? {
        let at = at
        return Self.cached(in: &statuses, record, schedules, index) { $0.hours.status(at: at, in: $0.timeZone, place: $1) }
    }

    /// The post's status, next change and comment at the query's instant, for a hit; nil without hours.
    mutating func state(of record: PostRecord) -> OpeningState? {
        let at = at
        return Self.cached(in: &states, record, schedules, index) { $0.hours.state(at: at, in: $0.timeZone, place: $1) }
    }

    /// What `judge` says of a record's schedule, judged once per schedule and query.
    private static func cached<Answer>(in cache: inout [UInt32: Answer], _ record: PostRecord, _ schedules: [PostIndex.Schedule?],
                                       _ index: PostIndex, _ judge: (PostIndex.Schedule, OpeningHoursPlace) -> Answer) -> Answer? {
        guard record.schedule != 0, let schedule = schedules[Int(record.schedule)] else { return nil }
        if let known = cache[record.schedule] { return known }
        let answer = judge(schedule, index.place(of: schedule))
        cache[record.schedule] = answer
        return answer
    }

    /// The slots of the query word with the fewest postings, when scanning them is
    /// cheaper than walking the trees; nil otherwise (or without words).
    func cheapestPostings(wanted: Int, total: Int) -> [Int32]? {
        guard let group = groups.min(by: { postingCount($0) < postingCount($1) }),
              PostIndex.postingsAreCheaper(postings: postingCount(group), wanted: wanted, total: total)
        else { return nil }
        if group.count == 1 { return postings[Int(group[0])] }
        // A post may hold several words of a prefix: list it once.
        var slots = group.flatMap { postings[Int($0)] }
        slots.sort()
        var unique: [Int32] = []
        unique.reserveCapacity(slots.count)
        for slot in slots where unique.last != slot { unique.append(slot) }
        return unique
    }

    private func postingCount(_ group: [UInt32]) -> Int {
        group.reduce(0) { $0 + postings[Int($1)].count }
    }

    private static func contains(_ sorted: UnsafeBufferPointer<UInt32>, _ value: UInt32) -> Bool {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < sorted.count && sorted[low] == value
    }

    /// Whether two ascending lists share a value.
    private static func intersects(_ group: [UInt32], _ words: UnsafeBufferPointer<UInt32>) -> Bool {
        if group.count == 1 { return contains(words, group[0]) }
        var i = 0, j = 0
        while i < group.count, j < words.count {
            if group[i] == words[j] { return true }
            if group[i] < words[j] { i += 1 } else { j += 1 }
        }
        return false
    }
}

/// 32 bits that say which words a post may hold: each word id sets one bit, so a
/// post's signature lacks the bit of every word it does not hold (and has some bits
/// of words it does not hold, which the full check then rules out). With a few words
/// per post, a search for one word passes on about one post in eight that lacks it.
enum WordSignature {
    @inline(__always)
    static func bit(_ id: UInt32) -> UInt32 {
        // Fibonacci hashing: the top 5 bits of the product pick the bit.
        1 << ((id &* 0x9E37_79B9) >> 27)
    }

    static func of(_ ids: some Sequence<UInt32>) -> UInt32 {
        ids.reduce(0) { $0 | bit($1) }
    }
}

/// A min-priority queue of tree nodes by their squared chord distance.
struct NodeQueue {
    struct Entry {
        var distance: Double
        var tree: Int32
        var node: Int32
    }

    private var heap: [Entry] = []

    init() { heap.reserveCapacity(256) }

    mutating func push(_ distance: Double, tree: Int, node: Int) {
        heap.append(Entry(distance: distance, tree: Int32(tree), node: Int32(node)))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].distance < heap[parent].distance else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    mutating func pop() -> Entry? {
        guard let top = heap.first else { return nil }
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].distance < heap[smallest].distance { smallest = left }
                if right < heap.count, heap[right].distance < heap[smallest].distance { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return top
    }
}

/// A box of latitudes and longitudes, crossing 180° when `minLon > maxLon`.
struct LatLonBox {
    var minLat: Double
    var minLon: Double
    var maxLat: Double
    var maxLon: Double
    private let minZ: Double
    private let maxZ: Double
    /// The longitudes as an arc: its start and width in radians.
    private let arcStart: Double
    private let arcWidth: Double

    init(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double) {
        self.minLat = minLat
        self.minLon = minLon
        self.maxLat = maxLat
        self.maxLon = maxLon
        minZ = sin(minLat * .pi / 180) - 1e-12
        maxZ = sin(maxLat * .pi / 180) + 1e-12
        arcStart = minLon * .pi / 180
        let width = (maxLon - minLon) * .pi / 180
        arcWidth = width < 0 ? width + 2 * .pi : width
    }

    func contains(lat: Double, lon: Double) -> Bool {
        guard lat >= minLat, lat <= maxLat else { return false }
        return minLon <= maxLon ? (lon >= minLon && lon <= maxLon) : (lon >= minLon || lon <= maxLon)
    }

    /// Whether a tree node's box may hold a point of this box: its z range against
    /// the latitudes (z = sin lat), and the directions its x–y rectangle spans
    /// against the longitudes. Errs towards yes.
    func mayOverlap(_ node: KDTree.Node) -> Bool {
        guard node.maxZ >= minZ, node.minZ <= maxZ else { return false }
        if arcWidth >= 2 * .pi - 1e-9 { return true }
        // A rectangle around the axis holds every longitude.
        if node.minX <= 0, node.maxX >= 0, node.minY <= 0, node.maxY >= 0 { return true }
        let corners = [atan2(node.minY, node.minX), atan2(node.maxY, node.minX), atan2(node.minY, node.maxX), atan2(node.maxY, node.maxX)]
        // The rectangle misses the axis, so its directions span under 180°: measure
        // the corners from the first one.
        var low = 0.0, high = 0.0
        for corner in corners.dropFirst() {
            var offset = corner - corners[0]
            if offset > .pi { offset -= 2 * .pi }
            if offset < -.pi { offset += 2 * .pi }
            low = min(low, offset)
            high = max(high, offset)
        }
        let nodeStart = corners[0] + low, nodeWidth = high - low
        let slack = 1e-9
        return Self.normalized(nodeStart - arcStart) <= arcWidth + slack || Self.normalized(arcStart - nodeStart) <= nodeWidth + slack
    }

    /// An angle in 0..<2π.
    private static func normalized(_ angle: Double) -> Double {
        let turn = 2 * Double.pi
        let value = angle.truncatingRemainder(dividingBy: turn)
        return value < 0 ? value + turn : value
    }
}
