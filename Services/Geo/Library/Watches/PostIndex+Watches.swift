import Contracts
import Foundation
import OpeningHours
import Wire

extension PostIndex {
    /// The events that applied changes make for the watches they touch: for each
    /// change in order, each watch whose area holds the post's old or new point (found
    /// through the grid, never by looking at every watch) compares the post before and
    /// after by the same tests as its one-shot op.
    ///
    /// Runs on the thread that applies changes, between publishing a batch and
    /// anything that moves records, so both slots of each transition are readable.
    func watchEvents(_ transitions: [Transition], watches state: inout WatchRegistry.State,
                     at now: Date) -> [(owner: String, json: [UInt8])] {
        var events: [(owner: String, json: [UInt8])] = []
        // One matcher per watch per batch: the words it looks for may have come into
        // the vocabulary with this very batch.
        var matchers: [String: Matcher] = [:]
        var touched = Set<String>()
        for transition in transitions {
            touched.removeAll(keepingCapacity: true)
            for slot in [transition.before, transition.after] {
                guard let slot else { continue }
                state.grid.candidates(lat: records[Int(slot)].lat, lon: records[Int(slot)].lon, into: &touched)
            }
            for id in touched {
                guard var watch = state.watches[id], let posts = watch.posts else { continue }
                var matcher = matchers[id] ?? {
                    var query = posts.query
                    query.at = now
                    return Matcher(query, index: self)
                }()
                defer { matchers[id] = matcher }
                let before = transition.before.flatMap { member($0, of: posts, &matcher) }
                let after = transition.after.flatMap { member($0, of: posts, &matcher) }
                let type: WatchEvent.Kind
                var hit: [UInt8] = []
                switch (before, after) {
                case (nil, nil):
                    continue
                case (nil, let after?):
                    type = .entered
                    hit = hitJSON(after, of: posts, &matcher)
                case (.some, nil):
                    type = .left
                case (let before?, let after?):
                    hit = hitJSON(after, of: posts, &matcher)
                    guard hitJSON(before, of: posts, &matcher) != hit else { continue }
                    type = .changed
                }
                watch.seq += 1
                state.watches[id] = watch
                var writer = JSONWriter(capacity: hit.count + 96)
                WatchEventWriter.begin(type, watchId: id, seq: watch.seq, into: &writer)
                if let left = before, after == nil {
                    writer.appendASCII(",\"postId\":")
                    bytes.withElements(records[Int(left.slot)].id) { writer.writeString(utf8: $0) }
                } else {
                    writer.appendASCII(",\"hit\":")
                    writer.writeRaw(hit)
                }
                writer.appendASCII("}")
                events.append((watch.owner, writer.bytes))
            }
        }
        return events
    }

    /// The events the clock makes for `openNow` watches: a post whose hours opened
    /// between `from` and `to` enters the watches it now matches, one whose hours
    /// closed leaves them. Only schedules that changed between the two instants are
    /// looked for. The caller holds the read lock.
    func openingEvents(from: Date, to: Date, watches state: inout WatchRegistry.State) -> [(owner: String, json: [UInt8])] {
        let openNow = state.watches.values.filter { $0.posts?.query.openNow == true }
        guard !openNow.isEmpty else { return [] }
        // Schedule id → open (or closing soon) at `to`, for those that flipped.
        var flipped: [UInt32: Bool] = [:]
        for id in schedules.indices.dropFirst() {
            guard let schedule = schedules[id] else { continue }
            let place = place(of: schedule)
            let was = Self.isOpen(schedule.hours.status(at: from, in: schedule.timeZone, place: place))
            let now = Self.isOpen(schedule.hours.status(at: to, in: schedule.timeZone, place: place))
            if was != now { flipped[UInt32(id)] = now }
        }
        guard !flipped.isEmpty else { return [] }
        var events: [(owner: String, json: [UInt8])] = []
        for var watch in openNow {
            guard let posts = watch.posts else { continue }
            // The watch's other terms; whether open comes from `flipped`.
            var query = posts.query
            query.openNow = false
            query.at = to
            var matcher = Matcher(query, index: self)
            guard !matcher.matchesNothing else { continue }
            var changes: [(Found, opened: Bool)] = []
            switch posts.area {
            case .circle(let center, let radius):
                for found in everything(center, within: radius, matcher: &matcher) {
                    if let opened = flipped[records[Int(found.slot)].schedule] { changes.append((found, opened)) }
                }
            case .box(let box):
                forEachMatch(in: box, matcher: &matcher, wanted: .max) { slot in
                    if let opened = flipped[records[Int(slot)].schedule] { changes.append((Found(slot: slot, distance: 0), opened)) }
                }
            }
            // By id, so that a watch's events come in one order however the index is laid out.
            changes.sort { idOrder($0.0.slot, $1.0.slot) < 0 }
            for (found, opened) in changes {
                watch.seq += 1
                var writer = JSONWriter(capacity: 320)
                WatchEventWriter.begin(opened ? .entered : .left, watchId: watch.id, seq: watch.seq, into: &writer)
                if opened {
                    writer.appendASCII(",\"hit\":")
                    writer.writeRaw(hitJSON(found, of: posts, &matcher))
                } else {
                    writer.appendASCII(",\"postId\":")
                    bytes.withElements(records[Int(found.slot)].id) { writer.writeString(utf8: $0) }
                }
                writer.appendASCII("}")
                events.append((watch.owner, writer.bytes))
            }
            state.watches[watch.id]?.seq = watch.seq
        }
        return events
    }

    private static func isOpen(_ status: OpenStatus) -> Bool {
        status == .open || status == .closesSoon
    }

    /// A watch's first page at `instant`, as its one-shot op gives it; the caller
    /// holds the read lock.
    func firstPage(of watch: PostWatch, at instant: Date) -> HitPage {
        var query = watch.query
        query.at = instant
        switch watch.area {
        case .circle(let center, let radius):
            return searchHoldingLock(lat: center.lat, lon: center.lon, radius: radius, query: query, sort: watch.sort,
                                     limit: watch.limit, after: nil)
        case .box(let box):
            return withinHoldingLock(minLat: box.minLat, minLon: box.minLon, maxLat: box.maxLat, maxLon: box.maxLon, query: query,
                                     limit: watch.limit, after: nil)
        }
    }

    /// The post in `slot` as a member of the watch (with its distance), or nil when
    /// the watch's area or terms leave it out.
    private func member(_ slot: Int32, of watch: PostWatch, _ matcher: inout Matcher) -> Found? {
        guard !matcher.matchesNothing else { return nil }
        let record = records[Int(slot)]
        let (inside, distance) = watch.covers(record)
        guard inside, matcher.matches(record) else { return nil }
        return Found(slot: slot, distance: distance)
    }

    /// The hit the watch's one-shot op would give for the post.
    private func hitJSON(_ found: Found, of watch: PostWatch, _ matcher: inout Matcher) -> [UInt8] {
        var writer = JSONWriter(capacity: 256)
        let withDistance = if case .circle = watch.area { true } else { false }
        writeHit(found, withDistance: withDistance, matcher: &matcher, into: &writer)
        return writer.bytes
    }
}
