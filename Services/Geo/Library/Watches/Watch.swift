import Contracts
import Foundation

/// A standing query: an area, what a post must also be, and whose it is.
struct Watch: Sendable {
    enum Area: Sendable {
        /// Within `radius` metres of a centre, as `geo.search`: hits carry their distance.
        case circle(PostIndex.Center, radius: Double)
        /// Inside a box, as `geo.within`: hits carry no distance.
        case box(LatLonBox)

        var bounds: LatLonBounds {
            switch self {
            case .circle(let center, let radius): .around(lat: center.lat, lon: center.lon, radius: radius)
            case .box(let box): LatLonBounds(minLat: box.minLat, maxLat: box.maxLat, minLon: box.minLon, maxLon: box.maxLon)
            }
        }
    }

    let id: String
    let owner: String
    let area: Area
    /// Its terms; `at` is replaced by the moment of each evaluation.
    let query: PostQuery
    /// How its first page is ordered, and how long it is.
    let sort: SearchSort
    let limit: Int
    /// The centre a `search` watch reports (with its place when it named one).
    let center: SearchReply.Center?
    var expiresAt: Date
    /// Events published so far.
    var seq = 0

    init(id: String, owner: String, area: Area, query: PostQuery, sort: SearchSort, limit: Int, center: SearchReply.Center?,
         expiresAt: Date) {
        self.id = id
        self.owner = owner
        self.area = area
        self.query = query
        self.sort = sort
        self.limit = limit
        self.center = center
        self.expiresAt = expiresAt
    }

    /// The watch of a (validated) `geo.watch.open`; `center` is where a `search`
    /// watch's `lat`/`lon` or `place` resolved to.
    init(_ request: WatchOpenRequest, center: SearchReply.Center?, id: String, owner: String, expiresAt: Date) {
        if let search = request.search, let center {
            self.init(id: id, owner: owner, area: .circle(PostIndex.Center(lat: center.lat, lon: center.lon), radius: search.radius),
                      query: PostQuery(kinds: search.kinds, q: search.q, tags: search.tags, openNow: search.openNow ?? false),
                      sort: search.sort ?? .distance, limit: search.limit ?? 20, center: center, expiresAt: expiresAt)
        } else {
            // `validate` lets through only a request with `search` or `within`.
            let box = request.within!
            self.init(id: id, owner: owner,
                      area: .box(LatLonBox(minLat: box.minLat, minLon: box.minLon, maxLat: box.maxLat, maxLon: box.maxLon)),
                      query: PostQuery(kinds: box.kinds, q: box.q, tags: box.tags, openNow: box.openNow ?? false),
                      sort: .distance, limit: box.limit ?? GeoRules.withinDefaultLimit, center: nil, expiresAt: expiresAt)
        }
    }

    /// Whether a post at the record's point is in the area, by the same test as the
    /// one-shot op (so a watch and a fresh search agree to the last bit).
    func covers(_ record: PostRecord) -> (inside: Bool, distance: Double) {
        switch area {
        case .circle(let center, let radius):
            let distance = Sphere.distance(from: center, to: record)
            return (distance <= radius, distance)
        case .box(let box):
            return (box.contains(lat: record.lat, lon: record.lon), 0)
        }
    }

    var info: WatchInfo {
        WatchInfo(id: id, expiresAt: expiresAt, topic: GeoAPI.watchTopic(userId: owner))
    }
}
