import Contracts
import Foundation

/// Geo's search without sockets, for the benchmark tool's in-process measurements:
/// the same index and search code as `geo.search`, filled directly.
@_spi(Benchmarks)
public final class SearchPath: Sendable {
    private let index = PostIndex()

    /// Indexes posts given as (ref, kind, lat, lon, title), with the ref as id, and
    /// opening hours (with their zone) where `hours` gives some for a post's position.
    public init(posts: [(ref: String, kind: String, lat: Double, lon: Double, title: String)],
                hours: (Int) -> (hours: String, timezone: String)? = { _ in nil }) {
        let created = Date(timeIntervalSince1970: 1_700_000_000)
        index.load(expectedCount: posts.count) { add in
            for (position, post) in posts.enumerated() {
                let schedule = hours(position)
                let draft = PostDraft(kind: post.kind, title: post.title, lat: post.lat, lon: post.lon, hours: schedule?.hours,
                                      timezone: schedule?.timezone, ref: post.ref)
                add(IndexedPost(id: post.ref, ownerId: "owner", draft: draft, createdAt: created))
            }
        }
    }

    /// Searches as `geo.search` does (by distance); returns the hits' JSON size.
    public func search(lat: Double, lon: Double, radius: Double, q: String?, limit: Int, openNow: Bool = false,
                       at: Date = Date()) -> Int {
        index.search(lat: lat, lon: lon, radius: radius, query: PostQuery(q: q, openNow: openNow, at: at), sort: .distance,
                     limit: limit, after: nil).hits.count
    }
}
