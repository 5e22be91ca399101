import Contracts
import Foundation
import Synchronization

/// Places and countries from the GeoNames file geo ships
/// (`Resources/gazetteer.tsv.gz`, made by `Services/Geo/Gazetteer/derive_gazetteer.py`):
/// names to places, points to their nearest place, codes to countries.
///
/// Read once and never changed, so it is shared by every thread without locks.
public final class Gazetteer: Sendable {
    let places: [Place]
    private let countries: [String: Country]
    private let names: PlaceNames
    private let tree: KDTree

    init(places: [Place], alternateNames: [[String]], countries: [String: Country]) {
        self.places = places
        self.countries = countries
        names = PlaceNames(placeCount: places.count) { [places[$0].name] + alternateNames[$0] }
        tree = KDTree(points: places.enumerated().map { TreePoint(UnitVector(lat: $1.lat, lon: $1.lon), slot: Int32($0)) })
    }

    /// Places whose names (or alternate names) start with `query`'s words, best
    /// first: by how well a name matched (the whole name before a prefix, the place's
    /// own name before an alternate one, a name's start before a later word), then
    /// by population, then by id.
    func search(_ query: String, countryCode: String? = nil, limit: Int) -> [Place] {
        var best: [Int: PlaceNames.Quality] = [:]
        names.forEachMatch(of: PlaceNames.key(query)) { place, quality in
            if let countryCode, places[place].countryCode != countryCode { return }
            if let known = best[place], known <= quality { return }
            best[place] = quality
        }
        let ranked = best.sorted { a, b in
            if a.value != b.value { return a.value < b.value }
            let pa = places[a.key], pb = places[b.key]
            return pa.population != pb.population ? pa.population > pb.population : a.key < b.key
        }
        return ranked.prefix(limit).map { places[$0.key] }
    }

    /// The best match for a name, as `geo.search`'s `place` takes it.
    func resolve(_ name: String) -> Place? {
        search(name, limit: 1).first
    }

    /// The place nearest to a point, and its distance in metres.
    func nearest(lat: Double, lon: Double) -> (place: Place, distance: Double)? {
        guard let slot = tree.nearest(to: UnitVector(lat: lat, lon: lon)) else { return nil }
        let place = places[slot]
        return (place, Sphere.distance(lat1: lat, lon1: lon, lat2: place.lat, lon2: place.lon))
    }

    func country(code: String) -> Country? {
        countries[code.uppercased()]
    }

    /// The regional indicator symbols of a two-letter code: "NL" is 🇳🇱.
    static func flag(_ code: String) -> String {
        var flag = String.UnicodeScalarView()
        for scalar in code.uppercased().unicodeScalars where ("A"..."Z").contains(scalar) {
            if let indicator = Unicode.Scalar(0x1F1E6 + scalar.value - 0x41) { flag.append(indicator) }
        }
        return String(flag)
    }
}

extension Gazetteer {
    /// The file shipped with geo, or the one `HEREABOUTS_GAZETTEER` names.
    public static func defaultFile(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        if let path = environment["HEREABOUTS_GAZETTEER"], !path.isEmpty {
            return URL(fileURLWithPath: path)
        }
        guard let url = Bundle.module.url(forResource: "gazetteer", withExtension: "tsv.gz") else {
            throw GazetteerError.missingFile("gazetteer.tsv.gz is not among geo's resources; set HEREABOUTS_GAZETTEER")
        }
        return url
    }

    private static let loaded = Mutex<[URL: Gazetteer]>([:])

    /// The gazetteer in `file`, read once per process: the file does not change
    /// while a process runs, and tests start many services in one.
    public static func shared(from file: URL) throws -> Gazetteer {
        if let known = loaded.withLock({ $0[file] }) { return known }
        let gazetteer = try GazetteerFile.read(file)
        return loaded.withLock { loaded in
            if let known = loaded[file] { return known }
            loaded[file] = gazetteer
            return gazetteer
        }
    }
}

enum GazetteerError: Error, CustomStringConvertible {
    case missingFile(String)
    case malformed(line: Int, String)

    var description: String {
        switch self {
        case .missingFile(let message): message
        case .malformed(let line, let message): "gazetteer line \(line): \(message)"
        }
    }
}
