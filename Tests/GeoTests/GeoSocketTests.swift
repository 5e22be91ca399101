import Contracts
import Foundation
import ServiceKitTesting
import TestThreads
import Testing
import Wire

/// What the index tests check in-process, asked again as a client asks: through the
/// socket, against brute force over the posts the test made.
@Suite("geo over the socket: pages, nearest, reverse", .ownThread)
struct GeoSocketTests {
    struct Made {
        let post: Post
        var texts: [String] { [post.title, post.text, post.category ?? ""] + post.tags }
    }

    static let centre = (lat: 52.0907, lon: 5.1214)

    /// Forty posts around Utrecht: three kinds, a few words, some at one spot.
    private func populate(_ geo: GeoFixture) throws -> [Made] {
        let owner = try geo.user()
        var made: [Made] = []
        let titles = ["Burger Bar", "Burrito Shack", "Pizza Plaza", "Café Köln", "Bike Repair", "Dom Tower"]
        let kinds = ["restaurant", "offer", "sight"]
        for index in 0..<40 {
            let angle = Double(index) * 0.7, metres = Double(index % 10) * 900 + 120
            let lat = index % 9 == 0 ? Self.centre.lat + 0.01 : Self.centre.lat + metres * cos(angle) / 111_195
            let lon = index % 9 == 0 ? Self.centre.lon : Self.centre.lon + metres * sin(angle) / (111_195 * cos(52.09 * .pi / 180))
            let post = try geo.create(PostDraft(kind: kinds[index % 3], title: "\(titles[index % titles.count]) \(index)",
                                                text: index % 4 == 0 ? "open late, vegan" : "", lat: lat, lon: lon,
                                                tags: index % 5 == 0 ? ["Terrace"] : []), token: owner.token)
            made.append(Made(post: post))
        }
        try geo.catchUp()
        return made
    }

    private func distance(_ post: Post) -> Double {
        GeoRules.distance(lat1: Self.centre.lat, lon1: Self.centre.lon, lat2: post.lat, lon2: post.lon)
    }

    @Test("geo.search pages, followed by their cursors, give every match once in order, for each sort")
    func searchPages() throws {
        let geo = try GeoFixture()
        let made = try populate(geo)
        for (q, sort) in [(nil, SearchSort.distance), ("bur", .distance), (nil, .title), ("vegan", .newest), (nil, .titleDescending)] {
            let matching = made.filter { distance($0.post) <= 6_000 && ReferenceText.matches(q, $0.texts) }
            var paged: [Hit] = []
            var cursor: String?
            var pages = 0
            repeat {
                let reply = try geo.client.call(GeoAPI.search, SearchRequest(lat: Self.centre.lat, lon: Self.centre.lon, radius: 6_000, q: q,
                                                                             sort: sort, limit: 7, cursor: cursor))
                #expect(reply.hits.count <= 7)
                paged += reply.hits
                cursor = reply.nextCursor
                pages += 1
            } while cursor != nil && pages < 20
            #expect(Set(paged.map(\.id)).count == paged.count, "a hit came twice (\(q ?? "-"), \(sort))")
            #expect(Set(paged.map(\.id)) == Set(matching.map(\.post.id)), "\(q ?? "-"), \(sort)")
            let expected: [String] = switch sort {
            case .distance:
                matching.sorted { (distance($0.post), $0.post.id) < (distance($1.post), $1.post.id) }.map(\.post.id)
            case .title, .titleDescending:
                matching.sorted {
                    let (a, b) = (ReferenceText.fold($0.post.title), ReferenceText.fold($1.post.title))
                    return a == b ? $0.post.id < $1.post.id : (sort == .title ? Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8))
                                                                              : Array(b.utf8).lexicographicallyPrecedes(Array(a.utf8)))
                }.map(\.post.id)
            default:
                matching.sorted { ($0.post.createdAt, $0.post.id) > ($1.post.createdAt, $1.post.id) }.map(\.post.id)
            }
            #expect(paged.map(\.id) == expected, "\(q ?? "-"), \(sort)")
            #expect(pages == max(1, (matching.count + 6) / 7))
        }
        // A cursor kept for another sort is refused.
        let first = try geo.client.call(GeoAPI.search, SearchRequest(lat: Self.centre.lat, lon: Self.centre.lon, radius: 6_000, limit: 3))
        let cursor = try #require(first.nextCursor)
        #expect(geo.failure(GeoAPI.search, SearchRequest(lat: Self.centre.lat, lon: Self.centre.lon, radius: 6_000, sort: .title,
                                                          limit: 3, cursor: cursor))?.summary == "invalid_argument cursor")
    }

    @Test("geo.nearest with q and kinds gives the k nearest that match, nearest first, within maxDistance")
    func nearest() throws {
        let geo = try GeoFixture()
        let made = try populate(geo)
        for (q, kinds, k, maxDistance) in [(nil, nil, 10, nil), ("bur", nil, 5, nil), (nil, ["sight"], 4, nil),
                                           ("pizza", ["restaurant", "offer"], 3, nil), ("terrace", nil, 10, 4_000.0)] as [(String?, [String]?, Int, Double?)] {
            let reply = try geo.client.call(GeoAPI.nearest, NearestRequest(lat: Self.centre.lat, lon: Self.centre.lon, k: k, q: q,
                                                                           kinds: kinds, maxDistance: maxDistance))
            let expected = made.filter { made in
                ReferenceText.matches(q, made.texts) && (kinds.map { $0.contains(made.post.kind) } ?? true)
                    && distance(made.post) <= (maxDistance ?? .infinity)
            }.sorted { (distance($0.post), $0.post.id) < (distance($1.post), $1.post.id) }.prefix(k).map(\.post.id)
            #expect(reply.hits.map(\.id) == Array(expected), "\(q ?? "-") \(kinds ?? [])")
            #expect(reply.nextCursor == nil)
            for hit in reply.hits {
                let post = try #require(made.first { $0.post.id == hit.id }).post
                #expect(abs((hit.distance ?? -1) - distance(post)) <= 0.005)
            }
        }
    }

    @Test("geo.places.reverse over the socket names the nearest place and its distance")
    func reverse() throws {
        let geo = try GeoFixture()
        // 1.5 km due north of the gazetteer's Utrecht (52.09083, 5.12222).
        let point = (lat: 52.09083 + 1_500 / 111_195.0, lon: 5.12222)
        let reply = try geo.client.call(GeoAPI.placesReverse, PlacesReverseRequest(lat: point.lat, lon: point.lon))
        #expect(reply.place.name == "Utrecht" && reply.place.countryCode == "NL")
        #expect(abs(reply.distance - GeoRules.distance(lat1: point.lat, lon1: point.lon, lat2: reply.place.lat, lon2: reply.place.lon)) < 0.01)
        #expect(abs(reply.distance - 1_500) < 2)
        // In the open Pacific the nearest place is far, and the distance says so.
        let ocean = try geo.client.call(GeoAPI.placesReverse, PlacesReverseRequest(lat: -30, lon: -130))
        #expect(ocean.distance > 500_000)
    }
}
