import Contracts
import Foundation
import Synchronization

/// Where discoverable users live (their saved home, not a tracked position), for
/// `geo.users.near`.
///
/// Users are few beside posts and change seldom, so each applied batch rebuilds one
/// tree and publishes it as an immutable snapshot; searches take the snapshot.
public final class UserIndex: Sendable {
    struct Home: Sendable {
        var userId: String
        var lat: Double
        var lon: Double
        var attributes: Attributes
    }

    enum Change: Sendable {
        case set(Home)
        case remove(String)
    }

    final class Snapshot: Sendable {
        let homes: [Home]
        let tree: KDTree

        init(homes: [Home]) {
            self.homes = homes
            tree = KDTree(points: homes.enumerated().map { TreePoint(UnitVector(lat: $1.lat, lon: $1.lon), slot: Int32($0)) })
        }
    }

    /// Only the thread that applies changes writes `homes`.
    private let homes = Mutex<[String: Home]>([:])
    private let snapshot = Mutex<Snapshot>(Snapshot(homes: []))

    public init() {}

    public var count: Int { snapshot.withLock { $0.homes.count } }

    /// Applies changes and returns the points they touched (each home's old and new
    /// place), for the watches to look at.
    @discardableResult
    func apply(_ changes: [Change]) -> [(lat: Double, lon: Double)] {
        var touched: [(lat: Double, lon: Double)] = []
        let all = homes.withLock { homes -> [Home] in
            for change in changes {
                let id: String
                switch change {
                case .set(let home):
                    id = home.userId
                    touched.append((home.lat, home.lon))
                case .remove(let removed):
                    id = removed
                }
                if let old = homes[id] { touched.append((old.lat, old.lon)) }
                switch change {
                case .set(let home): homes[id] = home
                case .remove: homes[id] = nil
                }
            }
            return Array(homes.values)
        }
        let next = Snapshot(homes: all)
        snapshot.withLock { $0 = next }
        return touched
    }

    /// Users whose banded distance is within `radius` (itself rounded up to a band),
    /// banded distance first, then id; `caller` left out.
    ///
    /// Nothing here looks at a distance finer than its band, and homes are
    /// `HomeGrid` cell centres: what a caller learns, however many queries it makes
    /// from wherever, is the cell.
    func near(lat: Double, lon: Double, radius: Double, attributes: Attributes?, excluding caller: String, limit: Int) -> [NearUser] {
        let current = snapshot.withLock { $0 }
        let center = UnitVector(lat: lat, lon: lon)
        let reach = Self.band(radius)
        var found: [NearUser] = []
        current.tree.forEach(near: center, chordSquared: Sphere.chordSquaredBound(forDistance: reach)) { point in
            let home = current.homes[Int(point.slot)]
            guard home.userId != caller else { return }
            let band = Self.band(Sphere.distance(lat1: lat, lon1: lon, lat2: home.lat, lon2: home.lon))
            guard band <= reach else { return }
            if let attributes, !attributes.values.allSatisfy({ home.attributes[$0.key] == $0.value }) { return }
            found.append(NearUser(userId: home.userId, distance: band))
        }
        // Ordered by the band, not the exact distance, so the order tells no more
        // than the distances shown.
        found.sort { $0.distance != $1.distance ? $0.distance < $1.distance : $0.userId.utf8.lexicographicallyPrecedes($1.userId.utf8) }
        return Array(found.prefix(limit))
    }

    static func band(_ distance: Double) -> Double {
        let band = GeoRules.userDistanceBand
        return max(band, (distance / band).rounded(.up) * band)
    }
}
