import Contracts
import Foundation
import ServiceKitTesting
@testable import Geo
import TestThreads
import Testing
import Wire

/// The index against brute force: every answer must equal what a scan of all posts
/// with the haversine distance gives, ties by id, near the poles and across 180°.
@Suite("The post index against brute force", .ownThread)
struct IndexPropertyTests {
    static let words = ["burger", "burrito", "pizza", "sushi", "museum", "park", "kayak", "reef", "café", "köln"]
    static let kinds = ["offer", "restaurant", "sight", "tip"]

    /// Deterministic randomness, so a failure can be replayed.
    typealias Seeded = SeededRandom

    /// Points clustered where trouble is: both poles, both sides of 180°, and one
    /// dense town (equal distances and many ties there come from duplicates).
    static func randomPost(_ n: Int, using random: inout Seeded) -> IndexedPost {
        let spots: [(Double, Double)] = [(89.9, 0), (-89.95, 120), (0.5, 179.95), (-10, -179.9), (52.09, 5.12)]
        let spot = spots[Int.random(in: 0..<spots.count, using: &random)]
        var lat = spot.0 + Double.random(in: -0.3...0.3, using: &random)
        lat = min(90, max(-90, lat))
        var lon = spot.1 + Double.random(in: -0.6...0.6, using: &random)
        if lon > 180 { lon -= 360 }
        if lon < -180 { lon += 360 }
        if n % 17 == 0 { lat = 52.09; lon = 5.12 }  // exact duplicates: ties by id
        let title = (0..<Int.random(in: 1...3, using: &random)).map { _ in words.randomElement(using: &random)! }.joined(separator: " ")
        let draft = PostDraft(kind: kinds[n % kinds.count], title: title, text: n % 5 == 0 ? "Great Pizza here" : "", lat: lat, lon: lon,
                              tags: n % 4 == 0 ? ["Vegan"] : [])
        return IndexedPost(id: "p\(String(n, radix: 36))", ownerId: "owner\(n % 3)", draft: draft,
                           rating: n % 3 == 0 ? Rating(average: Double(n % 5) + 1, count: 1) : Rating(average: nil, count: 0),
                           createdAt: Date(timeIntervalSince1970: Double(1_700_000_000 + n % 50)))
    }

    /// A post matches a query as the protocol says (by the reference words, not geo's).
    static func matches(_ post: IndexedPost, q: String?, kinds: [String]?) -> Bool {
        if let kinds, !kinds.isEmpty, !kinds.contains(post.kind) { return false }
        return ReferenceText.matches(q, [post.title, post.text, post.category ?? ""] + post.tags)
    }

    static func decode(_ page: HitPage) throws -> [Hit] {
        try JSONValueDecoder().decode([Hit].self, from: Data(page.hits))
    }

    struct Dataset {
        var index = PostIndex()
        var posts: [String: IndexedPost] = [:]

        /// Loads some posts at start, then streams changes: new posts, moves and
        /// deletions, so the index has several trees, a buffer and dead slots.
        /// With `churn`, changes are mostly edits and deletions of `count / 2`
        /// posts loaded at start, `count * 3` of them, so dead slots pile up past
        /// the live ones again and again and the index compacts several times.
        init(seed: UInt64, count: Int, churn: Bool = false) {
            var random = Seeded(state: seed)
            let initial = (0..<count / 2).map { IndexPropertyTests.randomPost($0, using: &random) }
            index.load(expectedCount: initial.count) { add in initial.forEach(add) }
            for post in initial { posts[post.id] = post }
            var next = count / 2
            var changes = 0
            let newShare = churn ? 3 : 6, editShare = churn ? 7 : 8
            while churn ? changes < count * 3 : next < count {
                var batch: [PostIndex.Change] = []
                for _ in 0..<97 {
                    changes += 1
                    let roll = Int.random(in: 0..<10, using: &random)
                    if roll < newShare || posts.isEmpty {
                        let post = IndexPropertyTests.randomPost(next, using: &random)
                        next += 1
                        posts[post.id] = post
                        batch.append(.upsert(post))
                    } else if roll < editShare {
                        var post = posts.randomElement(using: &random)!.value
                        post.lat = min(90, max(-90, post.lat + Double.random(in: -0.1...0.1, using: &random)))
                        post.title += " park"
                        posts[post.id] = post
                        batch.append(.upsert(post))
                    } else {
                        let id = posts.keys.randomElement(using: &random)!
                        posts[id] = nil
                        batch.append(.delete(id))
                    }
                }
                index.apply(batch)
            }
        }

        func bruteForce(lat: Double, lon: Double, radius: Double, q: String?, kinds: [String]?) -> [(post: IndexedPost, distance: Double)] {
            posts.values.compactMap { post in
                let distance = Sphere.distance(lat1: lat, lon1: lon, lat2: post.lat, lon2: post.lon)
                guard distance <= radius, IndexPropertyTests.matches(post, q: q, kinds: kinds) else { return nil }
                return (post, distance)
            }
            .sorted { $0.distance != $1.distance ? $0.distance < $1.distance : $0.post.id.utf8.lexicographicallyPrecedes($1.post.id.utf8) }
        }
    }

    static let queries: [String?] = [nil, "burger", "bur", "pizza park", "cafe", "KOLN", "vegan", "zzz", "p"]

    @Test("search by distance, nearest and paging equal brute force", arguments: [1, 2, 3] as [UInt64])
    func searchByDistance(seed: UInt64) throws {
        let data = Dataset(seed: seed, count: 6_000)
        #expect(data.index.count == data.posts.count)
        #expect(data.index.trees.count + (data.index.pending.isEmpty ? 0 : 1) > 1, "several trees and a buffer are exercised")
        var random = Seeded(state: seed &* 31)
        var answered = 0
        for round in 0..<150 {
            let center = IndexPropertyTests.randomPost(100_000 + round, using: &random)
            let radius = [500.0, 5_000, 30_000, 500_000][round % 4]
            let q = Self.queries[round % Self.queries.count]
            let kinds: [String]? = round % 5 == 0 ? ["sight", "tip"] : nil
            let expected = data.bruteForce(lat: center.lat, lon: center.lon, radius: radius, q: q, kinds: kinds)
            let limit = [1, 7, 20, 100][round % 4]
            if expected.count > limit { answered += 1 }

            let query = PostQuery(kinds: kinds, q: q)
            let first = data.index.search(lat: center.lat, lon: center.lon, radius: radius, query: query, sort: .distance,
                                          limit: limit, after: nil)
            #expect(try Self.decode(first).map(\.id) == expected.prefix(limit).map(\.post.id), "round \(round)")

            let nearest = data.index.nearest(lat: center.lat, lon: center.lon, k: limit, maxDistance: radius, query: query)
            #expect(try Self.decode(nearest).map(\.id) == expected.prefix(limit).map(\.post.id), "nearest, round \(round)")

            // Paging through all pages gives the one big answer, nothing repeated or skipped.
            var paged: [String] = []
            var cursor: PageCursor?
            var pages = 0
            repeat {
                let page = data.index.search(lat: center.lat, lon: center.lon, radius: radius, query: query, sort: .distance,
                                             limit: 50, after: cursor)
                paged += try Self.decode(page).map(\.id)
                cursor = try page.nextCursor.map { try PageCursor(decoding: $0, sort: "distance") }
                pages += 1
            } while cursor != nil && pages < 200
            #expect(paged == expected.map(\.post.id), "paging, round \(round)")
        }
        #expect(answered > 40, "enough searches have more matches than their page holds")
    }

    @Test("other sorts page through exactly the matches in the radius")
    func otherSorts() throws {
        let data = Dataset(seed: 9, count: 3_000)
        for sort in SearchSort.allCases where sort != .distance {
            for q in [nil, "pizza", "bu"] as [String?] {
                let expected = data.bruteForce(lat: 52.09, lon: 5.12, radius: 40_000, q: q, kinds: nil).map(\.post)
                var paged: [Hit] = []
                var cursor: PageCursor?
                repeat {
                    let page = data.index.search(lat: 52.09, lon: 5.12, radius: 40_000, query: PostQuery(q: q), sort: sort,
                                                 limit: 13, after: cursor)
                    paged += try Self.decode(page)
                    cursor = try page.nextCursor.map { try PageCursor(decoding: $0, sort: sort.rawValue) }
                } while cursor != nil
                let ordered = expected.sorted { a, b in
                    func titleKey(_ p: IndexedPost) -> String { ReferenceText.fold(p.title) }
                    switch sort {
                    case .newest where a.createdAt != b.createdAt: return a.createdAt > b.createdAt
                    case .rating where (a.rating.average ?? -1) != (b.rating.average ?? -1):
                        return (a.rating.average ?? -1) > (b.rating.average ?? -1)
                    case .title where titleKey(a) != titleKey(b): return titleKey(a).utf8.lexicographicallyPrecedes(titleKey(b).utf8)
                    case .titleDescending where titleKey(a) != titleKey(b):
                        return titleKey(b).utf8.lexicographicallyPrecedes(titleKey(a).utf8)
                    case .newest: return b.id.utf8.lexicographicallyPrecedes(a.id.utf8)
                    default: return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
                    }
                }
                #expect(paged.map(\.id) == ordered.map(\.id), "\(sort) \(q ?? "-")")
            }
        }
    }

    @Test("within a box, also across 180°, equals brute force, paged by id")
    func within() throws {
        let data = Dataset(seed: 5, count: 6_000)
        let boxes: [(Double, Double, Double, Double)] = [
            (-1, 179.5, 1, -179.5), (-11, 179.8, -9, -179.5), (89.5, -180, 90, 180), (-90, -180, -89.9, 180),
            (52.0, 5.0, 52.2, 5.3), (-90, -180, 90, 180), (0, 179.9, 1, 180),
        ]
        for (minLat, minLon, maxLat, maxLon) in boxes {
            for q in [nil, "pizza"] as [String?] {
                let box = LatLonBox(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon)
                let expected = data.posts.values.filter { box.contains(lat: $0.lat, lon: $0.lon) && Self.matches($0, q: q, kinds: nil) }
                    .map(\.id).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
                var paged: [String] = []
                var cursor: PageCursor?
                repeat {
                    let page = data.index.within(minLat: minLat, minLon: minLon, maxLat: maxLat, maxLon: maxLon,
                                                 query: PostQuery(q: q), limit: 300, after: cursor)
                    paged += try Self.decode(page).map(\.id)
                    cursor = try page.nextCursor.map { try PageCursor(decoding: $0, sort: PostIndex.withinSort) }
                } while cursor != nil
                #expect(!expected.isEmpty || q != nil, "each box holds posts")
                #expect(paged == expected, "box \(minLat),\(minLon) – \(maxLat),\(maxLon) \(q ?? "-")")
            }
        }
    }

    @Test("past 65,536 kinds (any 2–20 letters is one) each post keeps its own, and searches by kind find it")
    func manyKinds() throws {
        // "aa", "ab", … in base 26: 70,000 distinct kinds, each a valid kind.
        func kind(_ n: Int) -> String {
            var n = n, letters: [Character] = []
            repeat {
                letters.append(Character(Unicode.Scalar(UInt8(97 + n % 26))))
                n /= 26
            } while n > 0
            return String(repeating: "a", count: max(0, 4 - letters.count)) + String(letters.reversed())
        }
        let index = PostIndex()
        let count = 70_000
        index.load(expectedCount: count) { add in
            for n in 0..<count {
                add(IndexedPost(id: "k\(n)", ownerId: "owner", draft: PostDraft(kind: kind(n), title: "stall", lat: 52.09, lon: 5.12),
                                createdAt: Date(timeIntervalSince1970: 1_700_000_000)))
            }
        }
        for n in [0, 65_535, 65_536, 69_999] {
            let page = index.search(lat: 52.09, lon: 5.12, radius: 100, query: PostQuery(kinds: [kind(n)]), sort: .distance, limit: 10, after: nil)
            let hits = try Self.decode(page)
            #expect(hits.map(\.id) == ["k\(n)"] && hits.first?.kind == kind(n), "kind \(kind(n))")
        }
    }

    @Test("after compactions under a long run of edits and deletions, searches still equal brute force and dead slots are gone")
    func compaction() throws {
        let data = Dataset(seed: 7, count: 4_000, churn: true)
        #expect(data.index.count == data.posts.count)
        let dead = data.index.records.count - data.index.count
        // Without compaction, 12,000 changes would leave about 9,000 dead slots.
        #expect(dead < max(data.index.count, PostIndex.compactionMinimum), "dead slots: \(dead)")
        #expect(data.index.vocabulary.postings.reduce(0) { $0 + $1.count } < 20 * (data.index.records.count + 1))
        var random = Seeded(state: 77)
        for round in 0..<60 {
            let center = IndexPropertyTests.randomPost(200_000 + round, using: &random)
            let radius = [5_000.0, 30_000, 500_000][round % 3]
            let q = Self.queries[round % Self.queries.count]
            let expected = data.bruteForce(lat: center.lat, lon: center.lon, radius: radius, q: q, kinds: nil).map(\.post.id)
            var paged: [String] = []
            var cursor: PageCursor?
            repeat {
                let page = data.index.search(lat: center.lat, lon: center.lon, radius: radius, query: PostQuery(q: q),
                                             sort: .distance, limit: 50, after: cursor)
                paged += try Self.decode(page).map(\.id)
                cursor = try page.nextCursor.map { try PageCursor(decoding: $0, sort: "distance") }
            } while cursor != nil
            #expect(paged == expected, "round \(round)")
            let nearest = data.index.nearest(lat: center.lat, lon: center.lon, k: 10, maxDistance: radius, query: PostQuery(q: q))
            #expect(try Self.decode(nearest).map(\.id) == Array(expected.prefix(10)), "nearest, round \(round)")
        }
        // Every live post is found by its id's slot, and dead ones are not.
        for id in data.posts.keys.prefix(500) {
            #expect(data.index.slots.slot(of: id, idOf: { data.index.records[Int($0)].id }, bytes: data.index.bytes) != nil)
        }
    }
}
