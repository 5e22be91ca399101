import Contracts
import Foundation
@testable import Geo
import ServiceKitTesting
import Synchronization
import TestThreads
import Testing
import Wire

/// Watches against brute force: after every batch, each watch's first page with its
/// events applied in order must be exactly the posts a scan of all of them finds, and
/// each hit what a fresh search gives; near the poles and across 180° too.
@Suite("Watches against brute force", .ownThread)
struct WatchPropertyTests {
    typealias Seeded = IndexPropertyTests.Seeded

    /// What a client keeps of a watch: its posts' hits by id, and the last seq seen.
    struct ClientView {
        var hits: [String: Hit] = [:]
        var seq = 0
    }

    /// A random standing query, clustered where the posts are (`randomPost`'s spots).
    static func randomWatch(_ n: Int, using random: inout Seeded) -> WatchOpenRequest {
        let spot = IndexPropertyTests.randomPost(1_000_000 + n, using: &random)
        let q: String? = [nil, nil, "burger", "bur", "pizza park", "cafe", "vegan", "p", "zzz"].randomElement(using: &random)!
        let kinds: [String]? = n % 4 == 0 ? ["sight", "tip"] : nil
        let tags: [String]? = n % 7 == 0 ? ["VEGAN"] : nil
        let openNow = n % 5 == 0
        if n % 3 == 0 {
            // A box; every other one crossing 180°.
            let minLat = max(-90, spot.lat - Double.random(in: 0.01...0.5, using: &random))
            let maxLat = min(90, spot.lat + Double.random(in: 0.01...0.5, using: &random))
            var minLon = spot.lon - Double.random(in: 0.01...0.8, using: &random)
            var maxLon = spot.lon + Double.random(in: 0.01...0.8, using: &random)
            if minLon < -180 { minLon += 360 }
            if maxLon > 180 { maxLon -= 360 }
            return WatchOpenRequest(within: WithinRequest(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon, kinds: kinds,
                                                          q: q, tags: tags, openNow: openNow, limit: 1_000))
        }
        let radius = [1_000.0, 10_000, 25_000, 80_000][n % 4]
        return WatchOpenRequest(search: SearchRequest(lat: spot.lat, lon: spot.lon, radius: radius, q: q, kinds: kinds, tags: tags,
                                                      openNow: openNow, limit: 100))
    }

    /// Whether a post belongs to a watch, by the protocol's rules written plainly.
    static func belongs(_ post: IndexedPost, to request: WatchOpenRequest) -> Bool {
        let q: String?, kinds: [String]?, tags: [String]?, openNow: Bool
        if let search = request.search {
            guard Sphere.distance(lat1: search.lat!, lon1: search.lon!, lat2: post.lat, lon2: post.lon) <= search.radius else { return false }
            (q, kinds, tags, openNow) = (search.q, search.kinds, search.tags, search.openNow ?? false)
        } else {
            let box = request.within!
            guard post.lat >= box.minLat, post.lat <= box.maxLat else { return false }
            let inLon = box.minLon <= box.maxLon ? (post.lon >= box.minLon && post.lon <= box.maxLon)
                : (post.lon >= box.minLon || post.lon <= box.maxLon)
            guard inLon else { return false }
            (q, kinds, tags, openNow) = (box.q, box.kinds, box.tags, box.openNow ?? false)
        }
        if let tags, !Set(tags.map(ReferenceText.fold)).isSubset(of: Set(post.tags.map(ReferenceText.fold))) { return false }
        // The posts' hours are "24/7" or none: open now is having hours.
        if openNow, post.hours == nil { return false }
        return IndexPropertyTests.matches(post, q: q, kinds: kinds)
    }

    /// `randomPost` with opening hours on some.
    static func post(_ n: Int, using random: inout Seeded) -> IndexedPost {
        var post = IndexPropertyTests.randomPost(n, using: &random)
        if n % 2 == 0 {
            post.hours = "24/7"
            post.timezone = "UTC"
        }
        return post
    }

    @Test("first page plus events equals brute force after every batch", arguments: [1, 2, 3] as [UInt64])
    func firstPagePlusEvents(seed: UInt64) throws {
        var random = Seeded(state: seed)
        let index = PostIndex()
        var posts: [String: IndexedPost] = [:]
        let initial = (0..<400).map { Self.post($0, using: &random) }
        index.load(expectedCount: initial.count) { add in initial.forEach(add) }
        for post in initial { posts[post.id] = post }

        let published = Mutex<[(owner: String, json: [UInt8])]>([])
        let registry = WatchRegistry { owner, json in published.withLock { $0.append((owner, json)) } }
        var requests: [String: WatchOpenRequest] = [:]
        var views: [String: ClientView] = [:]
        func open(_ n: Int) throws {
            let request = Self.randomWatch(n, using: &random)
            let (watch, page) = try registry.open(owner: "u\(n % 4)", requestID: "r\(n)", lease: 600) { id, expiresAt in
                try Self.watch(request, id: id, owner: "u\(n % 4)", expiresAt: expiresAt)
            } firstPage: { watch in index.lock.withReadLock { index.firstPage(of: watch.posts!, at: Date()) } }
            #expect(page.nextCursor == nil, "the test's watches fit on their first page")
            let hits = try JSONValueDecoder().decode([Hit].self, from: Data(page.hits))
            requests[watch.id] = request
            views[watch.id] = ClientView(hits: Dictionary(uniqueKeysWithValues: hits.map { ($0.id, $0) }))
        }
        for n in 0..<40 { try open(n) }

        var next = initial.count
        var eventCount = 0
        for batchNumber in 0..<60 {
            // Creates, moves, edits (words, kind, tags, hours) and deletes, some of the
            // same post twice in one batch.
            var batch: [PostIndex.Change] = []
            for _ in 0..<Int.random(in: 1...40, using: &random) {
                let roll = Int.random(in: 0..<10, using: &random)
                if roll < 3 || posts.isEmpty {
                    let post = Self.post(next, using: &random)
                    next += 1
                    posts[post.id] = post
                    batch.append(.upsert(post))
                } else if roll < 8 {
                    var post = posts.randomElement(using: &random)!.value
                    switch Int.random(in: 0..<5, using: &random) {
                    case 0:
                        post.lat = min(90, max(-90, post.lat + Double.random(in: -0.2...0.2, using: &random)))
                        post.lon += Double.random(in: -0.3...0.3, using: &random)
                        if post.lon > 180 { post.lon -= 360 }
                        if post.lon < -180 { post.lon += 360 }
                    case 1: post.title = IndexPropertyTests.words.randomElement(using: &random)!
                    case 2: post.kind = IndexPropertyTests.kinds.randomElement(using: &random)!
                    case 3: post.tags = post.tags.isEmpty ? ["vegan"] : []
                    default:
                        post.hours = post.hours == nil ? "24/7" : nil
                        post.timezone = post.hours == nil ? nil : "UTC"
                    }
                    posts[post.id] = post
                    batch.append(.upsert(post))
                } else {
                    let id = posts.keys.randomElement(using: &random)!
                    posts[id] = nil
                    batch.append(.delete(id))
                }
            }
            index.apply(batch) { transitions in
                registry.evaluate { index.watchEvents(transitions, watches: &$0, at: Date()) }
            }
            // A few watches open along the way, seeing the world from then on.
            if batchNumber % 10 == 5 { try open(1_000 + batchNumber) }

            let batchEvents: [(owner: String, json: [UInt8])] = published.withLock { events in
                defer { events = [] }
                return events
            }
            for (owner, json) in batchEvents {
                let event = try JSONValueDecoder().decode(WatchEvent.self, from: Data(json))
                eventCount += 1
                var view = try #require(views[event.watchId])
                #expect(owner.hasPrefix("u"))
                let expectedSeq = view.seq + 1
                #expect(event.seq == expectedSeq, "watch \(event.watchId): seq \(event.seq) after \(view.seq)")
                view.seq = event.seq
                switch event.type {
                case .entered, .changed: view.hits[try #require(event.hit).id] = event.hit
                case .left: view.hits[try #require(event.postId)] = nil
                case .expired: Issue.record("no lease ran out")
                }
                views[event.watchId] = view
            }
            for (id, request) in requests {
                let expected = Set(posts.values.filter { Self.belongs($0, to: request) }.map(\.id))
                let view = try #require(views[id])
                #expect(Set(view.hits.keys) == expected, "seed \(seed), batch \(batchNumber), watch \(id)")
                // The hits as a fresh search gives them now, on one long page.
                var whole = request
                whole.search?.limit = 5_000
                whole.within?.limit = 5_000
                let watch = try Self.watch(whole, id: id, owner: "", expiresAt: .distantFuture)
                let page = index.lock.withReadLock { index.firstPage(of: watch.posts!, at: Date()) }
                let fresh = try JSONValueDecoder().decode([Hit].self, from: Data(page.hits))
                #expect(page.nextCursor == nil && fresh.count == view.hits.count && fresh.allSatisfy { view.hits[$0.id] == $0 },
                        "batch \(batchNumber), watch \(id): \(fresh.count) fresh, \(view.hits.count) kept")
            }
        }
        #expect(eventCount > 200, "the stream moved posts in and out of watches (\(eventCount) events)")
    }

    static func watch(_ request: WatchOpenRequest, id: String, owner: String, expiresAt: Date) throws -> Watch {
        Watch(request, center: request.search.map { SearchReply.Center(lat: $0.lat!, lon: $0.lon!) }, id: id, owner: owner,
              expiresAt: expiresAt)
    }

    @Test("open-now watches follow the clock: posts enter as they open and leave as they close")
    func openingHours() throws {
        var random = Seeded(state: 7)
        let hours = ["Mo-Su 10:00-12:00", "Mo-Su 11:00-13:00", "24/7", "Mo-Su 10:30-11:30", nil]
        let posts = (0..<300).map { n -> IndexedPost in
            var post = IndexPropertyTests.randomPost(n, using: &random)
            post.hours = hours[n % hours.count]
            post.timezone = post.hours == nil ? nil : "UTC"
            return post
        }
        let index = PostIndex()
        index.load(expectedCount: posts.count) { add in posts.forEach(add) }
        let start = try Date("2026-11-23T09:58:30Z", strategy: .iso8601)
        let published = Mutex<[[UInt8]]>([])
        let registry = WatchRegistry(clock: start) { _, json in published.withLock { $0.append(json) } }
        var views: [String: (request: WatchOpenRequest, ids: Set<String>)] = [:]
        for n in 0..<24 {
            var request = Self.randomWatch(n * 5, using: &random)  // n * 5: every one open-now
            request.search?.limit = 100
            let (watch, page) = try registry.open(owner: "u", requestID: "r\(n)", lease: 600) { id, expiresAt in
                try Self.watch(request, id: id, owner: "u", expiresAt: expiresAt)
            } firstPage: { watch in index.lock.withReadLock { index.firstPage(of: watch.posts!, at: start) } }
            #expect(watch.posts?.query.openNow == true && page.nextCursor == nil)
            views[watch.id] = (request, Set(try JSONValueDecoder().decode([Hit].self, from: Data(page.hits)).map(\.id)))
        }
        var events = 0
        for minute in ["10:00:01", "10:00:40", "10:31:02", "11:00:00", "11:30:59", "12:00:03", "13:00:01", "13:05:00"] {
            let now = try Date("2026-11-23T\(minute)Z", strategy: .iso8601)
            registry.tick(now: now) { from, to, state in
                index.lock.withReadLock { index.openingEvents(from: from, to: to, watches: &state) }
            }
            for json in published.withLock({ batch in defer { batch = [] }; return batch }) {
                let event = try JSONValueDecoder().decode(WatchEvent.self, from: Data(json))
                events += 1
                switch event.type {
                case .entered: views[event.watchId]?.ids.insert(try #require(event.hit).id)
                case .left: views[event.watchId]?.ids.remove(try #require(event.postId))
                default: Issue.record("\(event.type) from the clock")
                }
            }
            for (id, view) in views {
                var whole = view.request
                whole.search?.limit = 5_000
                whole.within?.limit = 5_000
                let watch = try Self.watch(whole, id: id, owner: "u", expiresAt: .distantFuture)
                let fresh = try JSONValueDecoder().decode([Hit].self, from: Data(index.lock.withReadLock { index.firstPage(of: watch.posts!, at: now) }.hits))
                #expect(view.ids == Set(fresh.map(\.id)), "at \(minute), watch \(id)")
            }
        }
        #expect(events > 20, "posts opened and closed in the watches (\(events) events)")
    }

    @Test("people watches: first list plus events equals brute force after every batch of homes", arguments: [4, 5] as [UInt64])
    func people(seed: UInt64) throws {
        var random = Seeded(state: seed)
        let spots: [(Double, Double)] = [(89.99, 0), (0.1, 179.99), (51.5, 3.6)]
        func randomHome(_ userId: String) -> UserIndex.Home {
            let spot = spots.randomElement(using: &random)!
            var lon = spot.1 + Double.random(in: -0.1...0.1, using: &random)
            if lon > 180 { lon -= 360 }
            let attributes: Attributes = Bool.random(using: &random) ? ["certified": .bool(true)] : [:]
            return UserIndex.Home(userId: userId, lat: min(90, spot.0 + Double.random(in: -0.05...0.05, using: &random)), lon: lon,
                                  attributes: attributes)
        }
        let users = UserIndex()
        var homes: [String: UserIndex.Home] = [:]
        for n in 0..<60 { homes["u\(n)"] = randomHome("u\(n)") }
        users.apply(homes.values.map { .set($0) })

        let published = Mutex<[[UInt8]]>([])
        let registry = WatchRegistry { _, json in published.withLock { $0.append(json) } }
        var requests: [String: (owner: String, request: UsersNearRequest)] = [:]
        var views: [String: [String: Double]] = [:]
        for n in 0..<30 {
            let spot = spots[n % spots.count]
            let request = UsersNearRequest(lat: spot.0, lon: spot.1, radius: [700.0, 3_000, 8_000, 20_000][n % 4],
                                           attributes: n % 3 == 0 ? ["certified": .bool(true)] : nil, limit: [2, 5, 100][n % 3])
            let owner = "u\(n % 7)"
            let (watch, list) = try registry.open(owner: owner, requestID: "r\(n)", lease: 600) { id, expiresAt in
                Watch(WatchOpenRequest(usersNear: request), center: SearchReply.Center(lat: spot.0, lon: spot.1), id: id, owner: owner,
                      expiresAt: expiresAt)
            } firstPage: { watch in
                guard case .users(var near) = watch.subject else { throw ServiceError.internal }
                near.members = users.members(of: near, owner: owner)
                watch.subject = .users(near)
                return near.members
            }
            requests[watch.id] = (owner, request)
            views[watch.id] = Dictionary(uniqueKeysWithValues: list.map { ($0.userId, $0.distance) })
        }

        /// `geo.users.near` by its rules written plainly: every other discoverable
        /// home, its distance rounded up to 500 m, within the radius so rounded, with
        /// the attributes; nearest band first, then id; the first `limit`.
        func bruteForce(_ owner: String, _ request: UsersNearRequest) -> [String: Double] {
            let band = GeoRules.userDistanceBand
            let reach = max(band, (request.radius / band).rounded(.up) * band)
            let found = homes.values.compactMap { home -> (String, Double)? in
                guard home.userId != owner else { return nil }
                let distance = max(band, (Sphere.distance(lat1: request.lat!, lon1: request.lon!, lat2: home.lat, lon2: home.lon) / band)
                    .rounded(.up) * band)
                guard distance <= reach else { return nil }
                if let wanted = request.attributes, !wanted.values.allSatisfy({ home.attributes.values[$0.key] == $0.value }) { return nil }
                return (home.userId, distance)
            }.sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            return Dictionary(uniqueKeysWithValues: found.prefix(request.limit ?? 20).map { $0 })
        }

        var seqs: [String: Int] = [:]
        var eventCount = 0
        for batchNumber in 0..<80 {
            // Arrivals, moves (near and far), attribute changes and departures.
            var batch: [UserIndex.Change] = []
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let id = "u\(Int.random(in: 0..<90, using: &random))"
                if var home = homes[id], Int.random(in: 0..<4, using: &random) > 0 {
                    switch Int.random(in: 0..<3, using: &random) {
                    case 0:
                        home.lat = min(90, max(-90, home.lat + Double.random(in: -0.01...0.01, using: &random)))
                        home.lon = home.lon + Double.random(in: -0.01...0.01, using: &random)
                        if home.lon > 180 { home.lon -= 360 }
                        if home.lon < -180 { home.lon += 360 }
                    case 1: home = randomHome(id)
                    default: home.attributes = home.attributes.values.isEmpty ? ["certified": .bool(true)] : [:]
                    }
                    homes[id] = home
                    batch.append(.set(home))
                } else if homes[id] != nil {
                    homes[id] = nil
                    batch.append(.remove(id))
                } else {
                    homes[id] = randomHome(id)
                    batch.append(.set(homes[id]!))
                }
            }
            let touched = users.apply(batch)
            registry.evaluate { users.watchEvents(touching: touched, watches: &$0) }
            for json in published.withLock({ events in defer { events = [] }; return events }) {
                let event = try JSONValueDecoder().decode(WatchEvent.self, from: Data(json))
                eventCount += 1
                #expect(event.seq == seqs[event.watchId, default: 0] + 1)
                seqs[event.watchId] = event.seq
                switch event.type {
                case .entered:
                    let user = try #require(event.user)
                    #expect(views[event.watchId]?[user.userId] == nil, "entered twice")
                    views[event.watchId]?[user.userId] = user.distance
                case .changed:
                    let user = try #require(event.user)
                    #expect(views[event.watchId]?[user.userId] != nil, "changed before entering")
                    views[event.watchId]?[user.userId] = user.distance
                case .left:
                    let userId = try #require(event.userId)
                    #expect(views[event.watchId]?[userId] != nil, "left without entering")
                    views[event.watchId]?[userId] = nil
                case .expired: Issue.record("no lease ran out")
                }
            }
            for (id, (owner, request)) in requests {
                #expect(views[id] == bruteForce(owner, request), "seed \(seed), batch \(batchNumber), watch \(id)")
            }
        }
        #expect(eventCount > 100, "homes moved in and out of the watches (\(eventCount) events)")
    }
}
