import Contracts
import Foundation

/// Reads the tab-separated gazetteer file, gzipped as shipped or plain (its format is
/// described in `Services/Geo/Gazetteer/derive_gazetteer.py`).
enum GazetteerFile {
    static func read(_ url: URL) throws -> Gazetteer {
        let file = try Data(contentsOf: url)
        let data = Gunzip.isGzip(file) ? try Gunzip.inflate(file) : file
        var continents: [String: String] = [:]
        var countryRows: [[String]] = []
        var places: [Place] = []
        var alternates: [[String]] = []
        var translations = Translations()
        var translatedPlaceNames: [String: [String]] = [:]
        places.reserveCapacity(35_000)
        alternates.reserveCapacity(35_000)
        var lineNumber = 0
        for line in data.split(separator: 0x0A, omittingEmptySubsequences: true) {
            lineNumber += 1
            guard line.first != 0x23 else { continue }  // a `#` comment
            let fields = line.split(separator: 0x09, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
            switch fields.first {
            case "N" where fields.count == 3:
                continents[fields[1]] = fields[2]
            case "C" where fields.count == 9:
                countryRows.append(fields)
            case "P" where fields.count == 11:
                guard let lat = Double(fields[6]), let lon = Double(fields[7]), let population = Int(fields[8]) else {
                    throw GazetteerError.malformed(line: lineNumber, "a place needs numbers for lat, lon and population")
                }
                places.append(Place(id: fields[1], name: fields[2], nameLang: fields[3], countryCode: fields[4],
                                    admin1: fields[5].isEmpty ? nil : fields[5], lat: lat, lon: lon, population: population,
                                    timezone: fields[9]))
                alternates.append(fields[10].isEmpty ? [] : fields[10].split(separator: "|").map(String.init))
            case "T" where fields.count == 5:
                guard let kind = Translations.Kind(letter: fields[2]), LanguageTag(fields[1]) != nil else {
                    throw GazetteerError.malformed(line: lineNumber, "a translation needs a language tag and a kind of C, N, M or P")
                }
                translations.add(kind, key: fields[3], tag: fields[1], name: fields[4])
                if kind == .place { translatedPlaceNames[fields[3], default: []].append(fields[4]) }
            default:
                throw GazetteerError.malformed(line: lineNumber, "expected an N, C, P or T record with its fields")
            }
        }
        let slots = Dictionary(places.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { first, _ in first })
        var countries: [String: Gazetteer.CountryRecord] = [:]
        for row in countryRows {
            guard let population = Int(row[5]), let continentName = continents[row[8]] else {
                throw GazetteerError.malformed(line: 0, "country \(row[1]) needs a population and a known continent")
            }
            countries[row[1]] = Gazetteer.CountryRecord(
                code: row[1], name: row[2], capital: row[3].isEmpty ? nil : row[3], capitalPlace: slots[row[4]],
                population: population, currencyCode: row[6].isEmpty ? nil : row[6], currencyName: row[7].isEmpty ? nil : row[7],
                continent: row[8], continentName: continentName)
        }
        return Gazetteer(places: places, alternateNames: alternates,
                         translatedNames: places.map { translatedPlaceNames[$0.id] ?? [] }, countries: countries,
                         translations: translations)
    }
}
