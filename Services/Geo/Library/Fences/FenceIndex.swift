import Contracts
import Foundation
import Synchronization

/// The geofences: posts with a `notifyRadius`, as circles.
///
/// Fences are few beside posts (sights a tour guide marks), so, as for users' homes,
/// each batch that changes one publishes a new immutable snapshot with its own tree.
public final class FenceIndex: Sendable {
    struct Fence: Sendable, Equatable {
        var postId: String
        var lat: Double
        var lon: Double
        var radius: Double
    }

    final class Snapshot: Sendable {
        let fences: [Fence]
        let slots: [String: Int]
        let tree: KDTree
        /// The largest radius: how far from a user a fence they are in may be.
        let maxRadius: Double

        init(fences: [Fence]) {
            self.fences = fences
            slots = Dictionary(uniqueKeysWithValues: fences.enumerated().map { ($1.postId, $0) })
            tree = KDTree(points: fences.enumerated().map { TreePoint(UnitVector(lat: $1.lat, lon: $1.lon), slot: Int32($0)) })
            maxRadius = fences.map(\.radius).max() ?? 0
        }

        func fence(_ postId: String) -> Fence? { slots[postId].map { fences[$0] } }

        /// Every fence a user at the point may be in (within `GeoRules.fenceExitFactor`
        /// times its radius), with its distance.
        func near(lat: Double, lon: Double) -> [(fence: Fence, distance: Double)] {
            var found: [(Fence, Double)] = []
            let reach = maxRadius * GeoRules.fenceExitFactor
            tree.forEach(near: UnitVector(lat: lat, lon: lon), chordSquared: Sphere.chordSquaredBound(forDistance: reach)) { point in
                let fence = fences[Int(point.slot)]
                let distance = Sphere.distance(lat1: lat, lon1: lon, lat2: fence.lat, lon2: fence.lon)
                if distance <= fence.radius * GeoRules.fenceExitFactor { found.append((fence, distance)) }
            }
            return found
        }

        /// The `count` fences whose centres are nearest, nearest first (then by id).
        func nearest(lat: Double, lon: Double, count: Int) -> [(fence: Fence, distance: Double)] {
            tree.nearest(to: UnitVector(lat: lat, lon: lon), count: count)
                .map { fences[$0] }
                .map { ($0, Sphere.distance(lat1: lat, lon1: lon, lat2: $0.lat, lon2: $0.lon)) }
                .sorted { $0.1 != $1.1 ? $0.1 < $1.1 : $0.0.postId.utf8.lexicographicallyPrecedes($1.0.postId.utf8) }
        }
    }

    /// Only the thread that applies changes writes `fences`.
    private let fences = Mutex<[String: Fence]>([:])
    private let current = Mutex<Snapshot>(Snapshot(fences: []))

    public init() {}

    var snapshot: Snapshot { current.withLock { $0 } }
    public var count: Int { snapshot.fences.count }

    func contains(_ postId: String) -> Bool { snapshot.slots[postId] != nil }

    /// Follows the posts' changes: a post with a `notifyRadius` is a fence, one
    /// without (or deleted) is not.
    func apply(_ changes: [PostIndex.Change]) {
        let changed = fences.withLock { fences -> [Fence]? in
            var changed = false
            for change in changes {
                switch change {
                case .upsert(let post):
                    let fence = post.notifyRadius.map { Fence(postId: post.id, lat: post.lat, lon: post.lon, radius: $0) }
                    if fences[post.id] != fence {
                        fences[post.id] = fence
                        changed = true
                    }
                case .delete(let id):
                    if fences.removeValue(forKey: id) != nil { changed = true }
                }
            }
            return changed ? Array(fences.values) : nil
        }
        guard let changed else { return }
        let next = Snapshot(fences: changed)
        current.withLock { $0 = next }
    }
}
