import Contracts
import Foundation

/// The geofence rule, without state or IO: given the fences a user was in and where
/// they are now, which they entered, left, and are in.
///
/// A user enters a fence at a distance ≤ its radius r and leaves it beyond
/// 1.1 r (`GeoRules.fenceExitFactor`): in the band between, they stay as they were.
/// A fence that no longer exists is left.
struct FenceCrossing: Equatable {
    var entered: [String]
    var exited: [String]
    var inside: [String]

    init(entered: [String], exited: [String], inside: [String]) {
        self.entered = entered
        self.exited = exited
        self.inside = inside
    }

    init(wasInside before: Set<String>, near: [(fence: FenceIndex.Fence, distance: Double)]) {
        let byNearness = near.sorted { a, b in
            a.distance != b.distance ? a.distance < b.distance : a.fence.postId.utf8.lexicographicallyPrecedes(b.fence.postId.utf8)
        }
        var inside: [String] = [], entered: [String] = []
        var stillInside = Set<String>()
        for (fence, distance) in byNearness {
            let wasIn = before.contains(fence.postId)
            // `near` holds only fences within the exit distance: one the user was in stays.
            guard wasIn || distance <= fence.radius else { continue }
            inside.append(fence.postId)
            stillInside.insert(fence.postId)
            if !wasIn { entered.append(fence.postId) }
        }
        self.inside = inside
        self.entered = entered
        // Those left are farther than every fence still in: by id, as no order of
        // distance is both cheap and meaningful for a fence that may be gone.
        exited = before.subtracting(stillInside).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
