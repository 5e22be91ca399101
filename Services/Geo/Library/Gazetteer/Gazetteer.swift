import Contracts
import Foundation
import Synchronization

/// Places and countries from the GeoNames and CLDR file geo ships
/// (`Resources/gazetteer.tsv.gz`, made by `Services/Geo/Gazetteer/derive_gazetteer.py`):
/// names to places, points to their nearest place, codes to countries, each answered
/// in the language asked for where the file has it.
///
/// Read once and never changed, so it is shared by every thread without locks.
public final class Gazetteer: Sendable {
    /// A country as the file gives it: English names, and the capital as a place.
    struct CountryRecord: Sendable {
        var code: String
        var name: String
        var capital: String?
        /// The capital's slot in `places`, where the file names it.
        var capitalPlace: Int?
        var population: Int
        var currencyCode: String?
        var currencyName: String?
        var continent: String
        var continentName: String
    }

    /// Each place with its own name, in its own language.
    let places: [Place]
    /// `towns[i]`: the slot of the town place `i` is a section of (a district), if it is one.
    private let towns: [Int?]
    private let countries: [String: CountryRecord]
    private let translations: Translations
    private let names: PlaceNames
    private let tree: KDTree

    /// `translatedNames[i]` are place `i`'s names in other languages, searched like
    /// its alternate names.
    init(places: [Place], alternateNames: [[String]], translatedNames: [[String]], towns: [Int?],
         countries: [String: CountryRecord], translations: Translations) {
        self.places = places
        self.towns = towns
        self.countries = countries
        self.translations = translations
        names = PlaceNames(placeCount: places.count) { [places[$0].name] + alternateNames[$0] + translatedNames[$0] }
        tree = KDTree(points: places.enumerated().map { TreePoint(UnitVector(lat: $1.lat, lon: $1.lon), slot: Int32($0)) })
    }

    /// Places whose names (or alternate names, or names in any language) start with
    /// `query`'s words, best first: by how well a name matched (the whole name before a
    /// prefix, the place's own name before another one, a name's start before a later
    /// word), then by population, then by id.
    func search(_ query: String, countryCode: String? = nil, limit: Int, in language: LanguageTag? = nil) -> [Place] {
        var best: [Int: PlaceNames.Quality] = [:]
        names.forEachMatch(of: TextTerms.key(query)) { place, quality in
            if let countryCode, places[place].countryCode != countryCode { return }
            if let known = best[place], known <= quality { return }
            best[place] = quality
        }
        let ranked = best.sorted { a, b in
            if a.value != b.value { return a.value < b.value }
            let pa = places[a.key], pb = places[b.key]
            return pa.population != pb.population ? pa.population > pb.population : a.key < b.key
        }
        return ranked.prefix(limit).map { place($0.key, in: language) }
    }

    /// The best match for a name, as `geo.search`'s `place` takes it.
    func resolve(_ name: String, in language: LanguageTag? = nil) -> Place? {
        search(name, limit: 1, in: language).first
    }

    /// The place nearest to a point, its distance in metres, and, when that place is a
    /// section of a town (a district: `Altstadt Nord`), the town (`Köln`).
    func nearest(lat: Double, lon: Double, in language: LanguageTag? = nil) -> (place: Place, distance: Double, town: Place?)? {
        guard let slot = tree.nearest(to: UnitVector(lat: lat, lon: lon)) else { return nil }
        let place = place(slot, in: language)
        let town = towns[slot].map { self.place($0, in: language) }
        return (place, Sphere.distance(lat1: lat, lon1: lon, lat2: place.lat, lon2: place.lon), town)
    }

    /// A country named in `language`, else (and without one) in English.
    func country(code: String, in language: LanguageTag? = nil) -> Country? {
        guard let record = countries[code.uppercased()] else { return nil }
        let language = language ?? .english
        let name = translations.name(.country, record.code, in: language, else: .english)
        let capital = record.capitalPlace.map { place($0, in: language) }
        let currency = record.currencyCode.flatMap { translations.name(.currency, $0, in: language, else: .english) }
        let continent = translations.name(.continent, record.continent, in: language, else: .english)
        return Country(code: record.code, name: name?.text ?? record.name, nameLang: name?.lang ?? "en",
                       capital: capital?.name ?? record.capital,
                       capitalLang: capital?.nameLang ?? record.capital.map { _ in "en" }, population: record.population,
                       currencyCode: record.currencyCode, currencyName: currency?.text ?? record.currencyName,
                       currencyNameLang: currency?.lang ?? record.currencyName.map { _ in "en" },
                       continent: record.continent, continentName: continent?.text ?? record.continentName,
                       continentNameLang: continent?.lang ?? "en", flag: Self.flag(record.code))
    }

    /// Place `slot` named in `language` where the file names it so, else by its own
    /// name (the file leaves out a name that is the place's own); nil asks for its own name.
    private func place(_ slot: Int, in language: LanguageTag?) -> Place {
        var place = places[slot]
        guard let language else { return place }
        if let name = translations.name(.place, place.id, in: language) {
            place.name = name.text
            place.nameLang = name.lang
        }
        return place
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
