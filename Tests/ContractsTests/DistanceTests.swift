import Contracts
import Foundation
import Testing

/// A city pair with two published-style reference distances, computed apart from
/// this code (Python, 2026-11-23): on the protocol's sphere of radius 6,371,008.8 m
/// by the atan2 form of the great-circle formula, and on the WGS84 ellipsoid by
/// GeographicLib 2.0 (Karney's geodesics, the reference implementation).
struct CityPair: Sendable, CustomTestStringConvertible {
    let name: String
    let lat1: Double, lon1: Double, lat2: Double, lon2: Double
    let sphere: Double
    let wgs84: Double
    var testDescription: String { name }
}

@Suite("Distances on the protocol's sphere")
struct DistanceTests {
    static let pairs: [CityPair] = [
        CityPair(name: "London – Paris", lat1: 51.5074, lon1: -0.1278, lat2: 48.8566, lon2: 2.3522, sphere: 343_556.53, wgs84: 343_923.1),
        CityPair(name: "New York – Los Angeles", lat1: 40.7128, lon1: -74.006, lat2: 34.0522, lon2: -118.2437,
                 sphere: 3_935_751.69, wgs84: 3_944_422.2),
        CityPair(name: "Sydney – Auckland", lat1: -33.8688, lon1: 151.2093, lat2: -36.8485, lon2: 174.7633,
                 sphere: 2_155_901.30, wgs84: 2_160_508.8),
        CityPair(name: "Utrecht – Amsterdam", lat1: 52.0907, lon1: 5.1214, lat2: 52.3676, lon2: 4.9041, sphere: 34_162.11, wgs84: 34_201.9),
        CityPair(name: "Tokyo – São Paulo", lat1: 35.6762, lon1: 139.6503, lat2: -23.5505, lon2: -46.6333,
                 sphere: 18_537_231.90, wgs84: 18_533_547.5),
        CityPair(name: "Suva – Apia, across 180°", lat1: -18.1416, lon1: 178.4419, lat2: -13.8507, lon2: -171.7514,
                 sphere: 1_151_347.42, wgs84: 1_151_708.2),
        CityPair(name: "Longyearbyen – Tromsø, in the Arctic", lat1: 78.2232, lon1: 15.6267, lat2: 69.6492, lon2: 18.9553,
                 sphere: 958_490.19, wgs84: 962_035.9),
        CityPair(name: "Quito – Singapore, nearly antipodal", lat1: -0.1807, lon1: -78.4678, lat2: 1.3521, lon2: 103.8198,
                 sphere: 19_729_358.81, wgs84: 19_743_445.7),
    ]

    @Test("great-circle distances equal the sphere's reference values to the centimetre, and the ellipsoid's to 0.4 %",
          arguments: pairs)
    func referenceDistances(pair: CityPair) {
        let distance = GeoRules.distance(lat1: pair.lat1, lon1: pair.lon1, lat2: pair.lat2, lon2: pair.lon2)
        #expect(abs(distance - pair.sphere) < 0.01, "\(distance) m")
        // A sphere is not the Earth: within a few tenths of a percent of the true geodesic.
        #expect(abs(distance - pair.wgs84) / pair.wgs84 < 0.004, "\(distance) m")
        // And the same either way round.
        #expect(GeoRules.distance(lat1: pair.lat2, lon1: pair.lon2, lat2: pair.lat1, lon2: pair.lon1) == distance)
    }
}
