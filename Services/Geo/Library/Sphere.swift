import Contracts
import Foundation

/// A point on the unit sphere, as a 3-D vector.
///
/// Searching in 3-D rather than in latitude and longitude is what makes the 180°
/// meridian and the poles ordinary places: the straight-line (chord) distance
/// between two unit vectors grows with their great-circle distance, so "within r
/// metres" is "within a chord of c" and a k-d tree over the vectors answers it.
struct UnitVector: Sendable, Equatable {
    var x: Double
    var y: Double
    var z: Double

    init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }

    init(lat: Double, lon: Double) {
        let phi = lat * .pi / 180, lambda = lon * .pi / 180
        let cosPhi = cos(phi)
        self.init(x: cosPhi * cos(lambda), y: cosPhi * sin(lambda), z: sin(phi))
    }

    func chordSquared(to other: UnitVector) -> Double {
        let dx = x - other.x, dy = y - other.y, dz = z - other.z
        return dx * dx + dy * dy + dz * dz
    }
}

/// Great-circle distances on the protocol's sphere.
public enum Sphere {
    public static let radius = GeoRules.earthRadius

    /// The haversine distance in metres (`GeoRules.distance`). Every distance geo
    /// reports, sorts by or compares with a radius comes from here, so equal inputs
    /// give equal answers.
    @inline(__always)
    public static func distance(lat1: Double, lon1: Double, lat2: Double, lon2: Double) -> Double {
        GeoRules.distance(lat1: lat1, lon1: lon1, lat2: lat2, lon2: lon2)
    }

    /// The same distance, with the latitudes' cosines worked out beforehand.
    @inline(__always)
    static func distance(from center: PostIndex.Center, to record: PostRecord) -> Double {
        GeoRules.distance(lat1: center.lat, lon1: center.lon, cosLat1: center.cosLat,
                          lat2: record.lat, lon2: record.lon, cosLat2: record.cosLat)
    }

    /// The squared chord that a great-circle distance spans, made a little larger so
    /// that rounding never prunes a point that the exact comparison would keep: the
    /// index only uses it to skip what is surely too far.
    static func chordSquaredBound(forDistance metres: Double) -> Double {
        guard metres < .pi * radius else { return 4.000001 }
        let chord = 2 * sin(metres / (2 * radius))
        let padded = chord * (1 + 1e-9) + 1e-12
        return padded * padded
    }
}
