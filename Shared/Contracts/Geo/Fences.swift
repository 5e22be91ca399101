import Foundation
import Wire

/// `geo.fences.update`: where the caller's phone is now.
public struct FenceUpdateRequest: ValidatedBody, Equatable {
    public var lat: Double
    public var lon: Double

    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }

    public func validate() throws {
        try Check.latitude(lat)
        try Check.longitude(lon)
    }
}

/// Post ids of fences: `entered` and `inside` nearest first (then by id), `exited`
/// by id.
public struct FenceUpdateReply: Codable, Sendable, Equatable {
    /// Fences the caller came into with this update.
    public var entered: [String]
    /// Fences the caller left with this update.
    public var exited: [String]
    /// Every fence the caller is in after this update.
    public var inside: [String]

    public init(entered: [String], exited: [String], inside: [String]) {
        self.entered = entered
        self.exited = exited
        self.inside = inside
    }
}

/// `geo.fences.plan`: the fences a phone should watch from here.
public struct FencePlanRequest: ValidatedBody, Equatable {
    public var lat: Double
    public var lon: Double
    /// 1–20, default 20 (what iOS lets an app monitor at once).
    public var max: Int?

    public init(lat: Double, lon: Double, max: Int? = nil) {
        self.lat = lat
        self.lon = lon
        self.max = max
    }

    public func validate() throws {
        try Check.latitude(lat)
        try Check.longitude(lon)
        _ = try Check.limit(max, field: "max", max: GeoRules.fencePlanMax, default: GeoRules.fencePlanMax)
    }
}

/// A circle for the phone's own region monitoring.
public struct FenceRegion: Codable, Sendable, Equatable {
    public var postId: String
    public var lat: Double
    public var lon: Double
    /// The post's `notifyRadius`, metres.
    public var radius: Double

    public init(postId: String, lat: Double, lon: Double, radius: Double) {
        self.postId = postId
        self.lat = lat
        self.lon = lon
        self.radius = radius
    }
}

public struct FencePlanReply: Codable, Sendable, Equatable {
    /// Nearest centre first.
    public var regions: [FenceRegion]
    public init(regions: [FenceRegion]) { self.regions = regions }
}

/// What `geo.fence/<userId>/` carries for each crossing.
public struct FenceEvent: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable {
        case entered, exited
    }

    public var type: Kind
    public var postId: String
    public var at: Date

    public init(type: Kind, postId: String, at: Date) {
        self.type = type
        self.postId = postId
        self.at = at
    }
}
