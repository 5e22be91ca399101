import Foundation
import Wire

/// What geo's rules allow, shared by its requests.
public enum GeoRules {
    /// Mean Earth radius: every distance is great-circle on this sphere.
    public static let earthRadius = 6_371_008.8
    /// Half the Earth's circumference: no two points are farther apart.
    public static let maxDistance = (Double.pi * earthRadius).rounded(.up)
    public static let radius = 1.0...500_000.0
    public static let maxQuery = 200
    public static let maxKinds = 20
    public static let maxTags = 20
    public static let maxCursor = 600
    public static let nearestK = 1...100
    public static let withinLimit = 1_000
    public static let withinDefaultLimit = 100
    /// `geo.users.near` reports distances in bands of this many metres, rounded up.
    public static let userDistanceBand = 500.0
    public static let placesDefaultLimit = 10
    /// A user inside a fence of radius r leaves it beyond this many times r, so one
    /// standing on the edge does not flicker in and out.
    public static let fenceExitFactor = 1.1
    public static let fencePlanMax = 20

    /// The great-circle (haversine) distance in metres on the protocol's sphere: what
    /// geo reports, sorts by and compares with radii, and what clients show.
    @inlinable
    public static func distance(lat1: Double, lon1: Double, lat2: Double, lon2: Double) -> Double {
        distance(lat1: lat1, lon1: lon1, cosLat1: cosLatitude(lat1), lat2: lat2, lon2: lon2, cosLat2: cosLatitude(lat2))
    }

    /// The same distance, to the last bit, with each latitude's cosine given as
    /// `cosLatitude` computes it: for comparing one point with many, where the
    /// cosines are worked out once.
    @inlinable
    public static func distance(lat1: Double, lon1: Double, cosLat1: Double,
                                lat2: Double, lon2: Double, cosLat2: Double) -> Double {
        let phi1 = lat1 * .pi / 180, phi2 = lat2 * .pi / 180
        let dPhi = phi2 - phi1, dLambda = (lon2 - lon1) * .pi / 180
        let sinPhi = sin(dPhi / 2), sinLambda = sin(dLambda / 2)
        let a = sinPhi * sinPhi + cosLat1 * cosLat2 * sinLambda * sinLambda
        return 2 * earthRadius * asin(min(1, a.squareRoot()))
    }

    /// The cosine of a latitude in degrees, as `distance` uses it.
    @inlinable
    public static func cosLatitude(_ lat: Double) -> Double {
        cos(lat * .pi / 180)
    }

    static func filters(q: String?, kinds: [String]?, tags: [String]?) throws {
        if let q { try Check.length(q, field: "q", in: 0...maxQuery) }
        if let kinds {
            guard kinds.count <= maxKinds else {
                throw ServiceError.invalidArgument(field: "kinds", "kinds may hold at most \(maxKinds) kinds (it has \(kinds.count))")
            }
            for (index, kind) in kinds.enumerated() { try CatalogueRules.kind(kind, field: "kinds[\(index)]") }
        }
        if let tags {
            guard tags.count <= maxTags else {
                throw ServiceError.invalidArgument(field: "tags", "tags may hold at most \(maxTags) tags (it has \(tags.count))")
            }
            for (index, tag) in tags.enumerated() { try CatalogueRules.line(tag, field: "tags[\(index)]", length: CatalogueRules.tag) }
        }
    }

    /// A centre given as `lat` and `lon` (both), or as the name of a `place`.
    static func center(lat: Double?, lon: Double?, place: String?) throws {
        if let place {
            guard lat == nil, lon == nil else {
                throw ServiceError.invalidArgument(field: "place", "give either place or lat and lon, not both")
            }
            try placeName(place, field: "place")
            return
        }
        guard let lat else { throw ServiceError.invalidArgument(field: "lat", "lat and lon (or place) are required") }
        guard let lon else { throw ServiceError.invalidArgument(field: "lon", "lat and lon (or place) are required") }
        try Check.latitude(lat)
        try Check.longitude(lon)
    }

    /// A name to look up in the gazetteer: it must hold a letter or a digit.
    static func placeName(_ name: String, field: String) throws {
        try Check.length(name, field: field, in: 1...maxQuery)
        guard name.unicodeScalars.contains(where: { $0.properties.isAlphabetic || $0.properties.numericType != nil }) else {
            throw ServiceError.invalidArgument(field: field, "\(field) must hold a letter or a digit")
        }
    }

    static func cursor(_ cursor: String?) throws {
        if let cursor { try Check.length(cursor, field: "cursor", in: 1...maxCursor) }
    }
}

extension GeoRules {
    /// The longest lease a watch gets, and the one it gets when none is asked for:
    /// a client that vanishes costs nothing for longer than this.
    public static let watchLease = 600
    /// Watches one user may hold at once.
    public static let watchesPerUser = 50
    /// Watches the service holds at once, unless `GEO_MAX_WATCHES` says otherwise.
    public static let maxWatches = 200_000
}
