import OpeningHours
import Synchronization

/// The country and region of the points of opening hours that depend on the place
/// (`PH`, `SH`, the sun), for holidays. Geo's gazetteer loads beside the index, so a
/// schedule is made with its point only; the country is looked up on first use once
/// the gazetteer is there, and kept.
final class SchedulePlaces: Sendable {
    typealias Resolver = @Sendable (_ lat: Double, _ lon: Double) -> (country: String, admin1: String?)?

    private struct State {
        var resolver: Resolver?
        var regions: [Point: (country: String?, subdivision: String?)] = [:]
    }

    private struct Point: Hashable {
        var lat: Double
        var lon: Double
    }

    private let state = Mutex(State())

    /// Points are rounded to 0.01° (about a kilometre) before they are kept: sunrise
    /// moves by seconds over that, and one schedule serves a neighbourhood.
    static func rounded(_ value: Double) -> Double {
        (value * 100).rounded() / 100
    }

    func setResolver(_ resolver: @escaping Resolver) {
        state.withLock { $0.resolver = resolver }
    }

    /// The place of a schedule's point, with its country and holiday region when known.
    func place(lat: Double, lon: Double) -> OpeningHoursPlace {
        let point = Point(lat: lat, lon: lon)
        let region: (country: String?, subdivision: String?) = state.withLock { state in
            if let known = state.regions[point] { return known }
            guard let resolver = state.resolver else { return (nil, nil) }
            let found = resolver(lat, lon)
            let region = (found?.country, found.flatMap { found in
                found.admin1.flatMap { OpeningHoursPlace.holidaySubdivision(country: found.country, geoNamesAdmin1: $0) }
            })
            state.regions[point] = region
            return region
        }
        return OpeningHoursPlace(latitude: lat, longitude: lon, country: region.country, subdivision: region.subdivision)
    }
}
