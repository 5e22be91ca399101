import Contracts
import Foundation
import OpeningHours
import Wire

/// What a search asks of a post besides where it is.
struct PostQuery: Sendable {
    /// Any of these kinds; nil or empty for any kind.
    var kinds: [String]?
    /// Words that must all match title, text, tags or category; the last may be a prefix.
    var q: String?
    /// All of these tags (compared folded).
    var tags: [String]?
    var openNow = false
    /// The instant for open status.
    var at = Date()
    /// Whether hits say where `q`'s words are in their titles (`highlights`).
    var highlight = true
}

/// One page of hits, as the JSON array a reply carries.
struct HitPage {
    var hits: [UInt8]
    var nextCursor: String?

    static let empty = HitPage(hits: Array("[]".utf8), nextCursor: nil)
}

/// A post found, with its distance from the centre (nil for `within`).
struct Found {
    var slot: Int32
    var distance: Double
}

extension PostIndex {
    /// How many postings are cheaper to scan than walking the tree for one result:
    /// walking finds a match every 1/selectivity points, a posting list hands over
    /// only matches (that may be far away).
    static func postingsAreCheaper(postings: Int, wanted: Int, total: Int) -> Bool {
        postings <= 256 || Double(postings) * Double(postings) <= Double(wanted) * Double(max(total, 1)) * 4
    }

    /// Hits within `radius` metres of the centre, in `sort` order, after `cursor`.
    func search(lat: Double, lon: Double, radius: Double, query: PostQuery, sort: SearchSort, limit: Int,
                after cursor: PageCursor?) -> HitPage {
        lock.withReadLock { searchHoldingLock(lat: lat, lon: lon, radius: radius, query: query, sort: sort, limit: limit, after: cursor) }
    }

    /// `search`, for a caller that holds the read lock already (a watch's first page).
    func searchHoldingLock(lat: Double, lon: Double, radius: Double, query: PostQuery, sort: SearchSort, limit: Int,
                           after cursor: PageCursor?) -> HitPage {
        var matcher = Matcher(query, index: self)
        guard !matcher.matchesNothing else { return .empty }
        let center = Center(lat: lat, lon: lon)
        let found: [Found]
        switch sort {
        case .distance:
            found = nearest(center, within: radius, count: limit + 1, matcher: &matcher, after: cursor)
        default:
            var all = everything(center, within: radius, matcher: &matcher)
            if let cursor { all.removeAll { !isAfter($0, cursor, sort: sort) } }
            var best = BoundedHeap<Found>(capacity: limit + 1) { self.ranksBefore($0, $1, sort: sort) }
            for item in all { best.offer(item) }
            found = best.sorted()
        }
        return page(found, limit: limit, withDistance: true, sort: sort.rawValue, matcher: &matcher) { cursorKey($0, sort: sort) }
    }

    /// The `k` nearest matches within `maxDistance`.
    func nearest(lat: Double, lon: Double, k: Int, maxDistance: Double?, query: PostQuery) -> HitPage {
        lock.withReadLock {
            var matcher = Matcher(query, index: self)
            guard !matcher.matchesNothing else { return .empty }
            let found = nearest(Center(lat: lat, lon: lon), within: maxDistance ?? .infinity, count: k, matcher: &matcher, after: nil)
            return page(found, limit: k, withDistance: true, sort: "", matcher: &matcher) { _ in nil }
        }
    }

    /// Matches inside a box of latitudes and longitudes (crossing 180° when
    /// `minLon > maxLon`), ordered by id.
    func within(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double, query: PostQuery, limit: Int,
                after cursor: PageCursor?) -> HitPage {
        lock.withReadLock { withinHoldingLock(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon, query: query,
                                              limit: limit, after: cursor) }
    }

    /// `within`, for a caller that holds the read lock already.
    func withinHoldingLock(minLat: Double, minLon: Double, maxLat: Double, maxLon: Double, query: PostQuery, limit: Int,
                           after cursor: PageCursor?) -> HitPage {
        var matcher = Matcher(query, index: self)
        guard !matcher.matchesNothing else { return .empty }
        let box = LatLonBox(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon)
        var best = BoundedHeap<Found>(capacity: limit + 1) { self.idOrder($0.slot, $1.slot) < 0 }
        let cursorID = cursor.map { Array($0.id.utf8) }
        forEachMatch(in: box, matcher: &matcher, wanted: limit + 1) { slot in
            if let cursorID, bytes.withElements(records[Int(slot)].id, { b in cursorID.withUnsafeBufferPointer { Arena<UInt8>.compare(b, $0) } }) <= 0 {
                return
            }
            best.offer(Found(slot: slot, distance: 0))
        }
        return page(best.sorted(), limit: limit, withDistance: false, sort: Self.withinSort, matcher: &matcher) { _ in .idOnly }
    }

    /// Calls `body` with every live post inside the box that `matcher` keeps, in no
    /// order; `wanted` is how many the caller needs, for choosing how to look.
    func forEachMatch(in box: LatLonBox, matcher: inout Matcher, wanted: Int, _ body: (Int32) -> Void) {
        func consider(_ slot: Int32) {
            let record = records[Int(slot)]
            guard record.alive, box.contains(lat: record.lat, lon: record.lon), matcher.matches(record) else { return }
            body(slot)
        }
        if let postings = matcher.cheapestPostings(wanted: wanted, total: liveCount) {
            for slot in postings { consider(slot) }
            return
        }
        for slot in pending { consider(slot) }
        for tree in trees {
            tree.forEach(where: box.mayOverlap) { point in
                if matcher.mayMatch(words: point.words) { consider(point.slot) }
            }
        }
    }

    /// The cursor's sort name for `geo.within`, which orders by id.
    static let withinSort = "id"

    // MARK: Finding (under the read lock)

    struct Center {
        var lat: Double
        var lon: Double
        var cosLat: Double
        var vector: UnitVector
        init(lat: Double, lon: Double) {
            self.lat = lat
            self.lon = lon
            cosLat = GeoRules.cosLatitude(lat)
            vector = UnitVector(lat: lat, lon: lon)
        }
    }

    /// The `count` nearest matches within `radius`, after `cursor`, nearest first.
    private func nearest(_ center: Center, within radius: Double, count: Int, matcher: inout Matcher,
                         after cursor: PageCursor?) -> [Found] {
        var best = BoundedHeap<Found>(capacity: count) { self.ranksBefore($0, $1, sort: .distance) }
        let radiusBound = Sphere.chordSquaredBound(forDistance: radius)
        var bound = radiusBound
        func consider(_ slot: Int32) {
            let record = records[Int(slot)]
            guard record.alive else { return }
            // The filters first: a word lookup costs less than the trigonometry.
            guard matcher.matches(record) else { return }
            let distance = Sphere.distance(from: center, to: record)
            guard distance <= radius else { return }
            let item = Found(slot: slot, distance: distance)
            if let cursor, !isAfter(item, cursor, sort: .distance) { return }
            best.offer(item)
            if best.isFull, let worst = best.worst {
                bound = min(radiusBound, Sphere.chordSquaredBound(forDistance: worst.distance))
            }
        }
        if let postings = matcher.cheapestPostings(wanted: count, total: liveCount) {
            for slot in postings { consider(slot) }
            return best.sorted()
        }
        for slot in pending { consider(slot) }
        // Best first across all trees: nodes by their nearest possible point.
        var queue = NodeQueue()
        for (index, tree) in trees.enumerated() where tree.count > 0 {
            queue.push(tree.nodes[0].distanceSquared(to: center.vector), tree: index, node: 0)
        }
        while let next = queue.pop() {
            if next.distance > bound { break }
            let tree = trees[Int(next.tree)]
            let node = Int(next.node)
            if tree.isLeaf(node) {
                let box = tree.nodes[node]
                for index in Int(box.start)..<Int(box.end) {
                    // Points surely beyond the bound are skipped by their chord alone.
                    let point = tree.points[index]
                    let dx = point.x - center.vector.x, dy = point.y - center.vector.y, dz = point.z - center.vector.z
                    if dx * dx + dy * dy + dz * dz > bound || !matcher.mayMatch(words: point.words) { continue }
                    consider(point.slot)
                }
            } else {
                for child in (2 * node + 1)...(2 * node + 2) {
                    let distance = tree.nodes[child].distanceSquared(to: center.vector)
                    if distance <= bound { queue.push(distance, tree: Int(next.tree), node: child) }
                }
            }
        }
        return best.sorted()
    }

    /// Every match within `radius`, in no order.
    func everything(_ center: Center, within radius: Double, matcher: inout Matcher) -> [Found] {
        var found: [Found] = []
        func consider(_ slot: Int32) {
            let record = records[Int(slot)]
            guard record.alive else { return }
            guard matcher.matches(record) else { return }
            let distance = Sphere.distance(from: center, to: record)
            guard distance <= radius else { return }
            found.append(Found(slot: slot, distance: distance))
        }
        if let postings = matcher.cheapestPostings(wanted: 5_000, total: liveCount) {
            for slot in postings { consider(slot) }
            return found
        }
        let bound = Sphere.chordSquaredBound(forDistance: radius)
        for slot in pending { consider(slot) }
        for tree in trees {
            tree.forEach(near: center.vector, chordSquared: bound) { point in
                let dx = point.x - center.vector.x, dy = point.y - center.vector.y, dz = point.z - center.vector.z
                if dx * dx + dy * dy + dz * dz <= bound, matcher.mayMatch(words: point.words) { consider(point.slot) }
            }
        }
        return found
    }

    // MARK: Orders

    func idOrder(_ a: Int32, _ b: Int32) -> Int {
        bytes.compare(records[Int(a)].id, records[Int(b)].id)
    }

    /// Whether `a` comes before `b` in `sort` order; ties go by id, descending for
    /// `newest` (catalogue's ids grow with time, so the later of two posts made in
    /// the same second comes first).
    func ranksBefore(_ a: Found, _ b: Found, sort: SearchSort) -> Bool {
        let left = records[Int(a.slot)], right = records[Int(b.slot)]
        let primary: Int
        switch sort {
        case .distance: primary = a.distance < b.distance ? -1 : (a.distance > b.distance ? 1 : 0)
        case .newest: primary = left.createdAt > right.createdAt ? -1 : (left.createdAt < right.createdAt ? 1 : 0)
        case .rating:
            primary = left.ratingAverage > right.ratingAverage ? -1 : (left.ratingAverage < right.ratingAverage ? 1 : 0)
        case .title: primary = bytes.compare(left.sortTitle, right.sortTitle)
        case .titleDescending: primary = -bytes.compare(left.sortTitle, right.sortTitle)
        }
        if primary != 0 { return primary < 0 }
        let byID = bytes.compare(left.id, right.id)
        return sort == .newest ? byID > 0 : byID < 0
    }

    func cursorKey(_ found: Found, sort: SearchSort) -> PageCursor.Key {
        let record = records[Int(found.slot)]
        switch sort {
        case .distance: return .number(found.distance)
        case .newest: return .number(record.createdAt)
        case .rating: return .number(record.ratingAverage)
        case .title, .titleDescending: return .text(bytes.string(record.sortTitle))
        }
    }

    /// Whether `found` comes strictly after the cursor's position in `sort` order.
    func isAfter(_ found: Found, _ cursor: PageCursor, sort: SearchSort) -> Bool {
        let record = records[Int(found.slot)]
        var primary = 0
        switch (sort, cursor.key) {
        case (.distance, .number(let value)):
            primary = found.distance > value ? 1 : (found.distance < value ? -1 : 0)
        case (.newest, .number(let value)):
            primary = record.createdAt < value ? 1 : (record.createdAt > value ? -1 : 0)
        case (.rating, .number(let value)):
            primary = record.ratingAverage < value ? 1 : (record.ratingAverage > value ? -1 : 0)
        case (.title, .text(let text)), (.titleDescending, .text(let text)):
            var text = text
            let order = text.withUTF8 { key in bytes.withElements(record.sortTitle) { Arena<UInt8>.compare($0, key) } }
            primary = sort == .title ? order : -order
        default:
            return true
        }
        if primary != 0 { return primary > 0 }
        var id = cursor.id
        let byID = id.withUTF8 { key in bytes.withElements(record.id) { Arena<UInt8>.compare($0, key) } }
        return sort == .newest ? byID < 0 : byID > 0
    }

    // MARK: Writing hits

    /// Writes the first `limit` of `found`; `key` gives the cursor of the last hit
    /// written when more follow (nil: this op does not page).
    private func page(_ found: [Found], limit: Int, withDistance: Bool, sort: String, matcher: inout Matcher,
                      key: (Found) -> PageCursor.Key?) -> HitPage {
        var writer = JSONWriter(capacity: 256 * min(found.count, limit) + 2)
        writer.appendASCII("[")
        var written = 0
        for item in found.prefix(limit) {
            let start = writer.bytes.count
            if written > 0 { writer.appendASCII(",") }
            writeHit(item, withDistance: withDistance, matcher: &matcher, into: &writer)
            if writer.bytes.count > Limits.replyPageBytes - 4096, written > 0 {
                // A page stops early rather than grow past the reply size it promises.
                writer.truncate(to: start)
                break
            }
            written += 1
        }
        writer.appendASCII("]")
        var nextCursor: String?
        if found.count > written, written > 0, let key = key(found[written - 1]) {
            let last = found[written - 1]
            nextCursor = PageCursor(sort: sort, key: key,
                                    id: bytes.string(records[Int(last.slot)].id)).encoded
        }
        return HitPage(hits: writer.bytes, nextCursor: nextCursor)
    }

    func writeHit(_ item: Found, withDistance: Bool, matcher: inout Matcher, into writer: inout JSONWriter) {
        let record = records[Int(item.slot)]
        func writeText(_ span: ArenaSpan) {
            bytes.withElements(span) { record.plainStrings ? writer.writeString(plainUTF8: $0) : writer.writeString(utf8: $0) }
        }
        writer.appendASCII("{\"id\":")
        writeText(record.id)
        writer.appendASCII(",\"distance\":")
        // Centimetres are as close as a distance is given.
        if withDistance { writer.write(hundredths: Int64((item.distance * 100).rounded())) } else { writer.appendASCII("null") }
        writer.appendASCII(",\"kind\":")
        writer.write(kindNames[Int(record.kind)])
        writer.appendASCII(",\"title\":")
        writeText(record.title)
        writer.appendASCII(",\"lat\":")
        writer.write(record.lat)
        writer.appendASCII(",\"lon\":")
        writer.write(record.lon)
        writer.appendASCII(",\"tags\":")
        bytes.withElements(record.tagsJSON) { writer.writeRaw($0) }
        writer.appendASCII(",\"ref\":")
        if record.refLength == 0 {
            writer.appendASCII("null")
        } else {
            writeText(record.ref)
        }
        writer.appendASCII(",\"ownerId\":")
        writer.write(ownerNames[Int(record.owner)])
        let hours = matcher.state(of: record)
        writer.appendASCII(",\"openStatus\":")
        if let hours { writer.write(hours.status.rawValue) } else { writer.appendASCII("null") }
        writer.appendASCII(",\"nextChange\":")
        if let next = hours?.nextChange { writer.write(Timestamp.format(next)) } else { writer.appendASCII("null") }
        writer.appendASCII(",\"hoursComment\":")
        if let comment = hours?.comment { writer.write(comment) } else { writer.appendASCII("null") }
        writer.appendASCII(",\"rating\":{\"average\":")
        if record.ratingAverage < 0 { writer.appendASCII("null") } else { writer.write(record.ratingAverage) }
        writer.appendASCII(",\"count\":")
        writer.write(Int64(record.ratingCount))
        writer.appendASCII("},\"highlights\":")
        if let highlights = matcher.highlights {
            writer.write(titleHighlights: bytes.withElements(record.title) { highlights.ranges(in: $0) })
        } else {
            writer.appendASCII("null")
        }
        writer.appendASCII("}")
    }
}
