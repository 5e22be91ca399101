import Contracts
import Foundation

/// A standing query: what it follows, and whose it is.
struct Watch: Sendable {
    /// Posts (`search`, `within`) or people (`usersNear`).
    enum Subject: Sendable {
        case posts(PostWatch)
        case users(UserWatch)
    }

    let id: String
    let owner: String
    var subject: Subject
    var expiresAt: Date
    /// Events published so far.
    var seq = 0

    init(id: String, owner: String, subject: Subject, expiresAt: Date) {
        self.id = id
        self.owner = owner
        self.subject = subject
        self.expiresAt = expiresAt
    }

    /// The watch of a (validated) `geo.watch.open`; `center` is where a `search` or
    /// `usersNear` watch's `lat`/`lon` or `place` resolved to.
    init(_ request: WatchOpenRequest, center: SearchReply.Center?, id: String, owner: String, expiresAt: Date) {
        let subject: Subject
        if let search = request.search, let center {
            subject = .posts(PostWatch(area: .circle(PostIndex.Center(lat: center.lat, lon: center.lon), radius: search.radius),
                                       query: PostQuery(kinds: search.kinds, q: search.q, tags: search.tags, openNow: search.openNow ?? false,
                                                        highlight: search.highlight ?? true),
                                       sort: search.sort ?? .distance, limit: search.limit ?? 20, center: center))
        } else if let near = request.usersNear, let center {
            subject = .users(UserWatch(center: center, reach: UserIndex.band(near.radius), attributes: near.attributes,
                                       limit: near.limit ?? 20))
        } else {
            // `validate` lets through only a request with one of the three.
            let box = request.within!
            subject = .posts(PostWatch(area: .box(LatLonBox(minLat: box.minLat, minLon: box.minLon, maxLat: box.maxLat, maxLon: box.maxLon)),
                                       query: PostQuery(kinds: box.kinds, q: box.q, tags: box.tags, openNow: box.openNow ?? false,
                                                        highlight: box.highlight ?? true),
                                       sort: .distance, limit: box.limit ?? GeoRules.withinDefaultLimit, center: nil))
        }
        self.init(id: id, owner: owner, subject: subject, expiresAt: expiresAt)
    }

    /// The box around everything the watch can see: where a change must be to touch it.
    var bounds: LatLonBounds {
        switch subject {
        case .posts(let posts): posts.area.bounds
        case .users(let users): .around(lat: users.center.lat, lon: users.center.lon, radius: users.reach)
        }
    }

    /// The centre a `search` or `usersNear` watch reports (with its place when it named one).
    var center: SearchReply.Center? {
        switch subject {
        case .posts(let posts): posts.center
        case .users(let users): users.center
        }
    }

    var posts: PostWatch? {
        if case .posts(let posts) = subject { posts } else { nil }
    }

    var info: WatchInfo {
        WatchInfo(id: id, expiresAt: expiresAt, topic: GeoAPI.watchTopic(userId: owner), seq: seq)
    }
}

/// A watch over posts: an area, and what a post must also be.
struct PostWatch: Sendable {
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

    let area: Area
    /// Its terms; `at` is replaced by the moment of each evaluation.
    let query: PostQuery
    /// How its first page is ordered, and how long it is.
    let sort: SearchSort
    let limit: Int
    /// The centre a `search` watch reports.
    let center: SearchReply.Center?

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
}

/// A watch over people (`geo.users.near`): the `limit` nearest discoverable homes
/// within `reach`, as that op gives them, kept so that each batch can say what changed.
struct UserWatch: Sendable {
    let center: SearchReply.Center
    /// The radius asked for, rounded up to a distance band.
    let reach: Double
    let attributes: Attributes?
    let limit: Int
    /// What the owner holds now: the first page, then every event applied.
    var members: [NearUser] = []
}
