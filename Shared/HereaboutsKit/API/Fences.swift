import Foundation

/// A post's geofence: a circle an app asks the system to watch (on iOS at most 20 at
/// once, so the server picks the nearest).
public struct FenceRegion: Sendable, Hashable {
    public var postId: String
    public var latitude: Double
    public var longitude: Double
    /// Metres.
    public var radius: Double
}

/// What one position report changed: posts entered and left, and those the user is inside.
public struct FenceCrossings: Sendable, Hashable {
    public var entered: [String]
    public var exited: [String]
    public var inside: [String]
}

extension Hereabouts {
    /// The fences around a position worth watching, at most `max` (20 by default).
    public func planFences(latitude: Double, longitude: Double, max: Int? = nil) async throws -> [FenceRegion] {
        try await send { try await $0.planFences(query: .init(lat: latitude, lon: longitude, max: max)).ok.body.json.regions }
            .map { FenceRegion(postId: $0.postId, latitude: $0.lat, longitude: $0.lon, radius: $0.radius) }
    }

    /// Reports the user's position: the server works out which fences were crossed
    /// (and sends `fence.entered` / `fence.exited` events to the user's sockets).
    @discardableResult
    public func updateFences(latitude: Double, longitude: Double) async throws -> FenceCrossings {
        let reply = try await send { try await $0.updateFences(body: .json(.init(lat: latitude, lon: longitude))).ok.body.json }
        return FenceCrossings(entered: reply.entered, exited: reply.exited, inside: reply.inside)
    }
}
