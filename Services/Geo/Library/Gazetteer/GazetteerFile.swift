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
            case "C" where fields.count == 8:
                countryRows.append(fields)
            case "P" where fields.count == 10:
                guard let lat = Double(fields[5]), let lon = Double(fields[6]), let population = Int(fields[7]) else {
                    throw GazetteerError.malformed(line: lineNumber, "a place needs numbers for lat, lon and population")
                }
                places.append(Place(id: fields[1], name: fields[2], countryCode: fields[3],
                                    admin1: fields[4].isEmpty ? nil : fields[4], lat: lat, lon: lon, population: population,
                                    timezone: fields[8]))
                alternates.append(fields[9].isEmpty ? [] : fields[9].split(separator: "|").map(String.init))
            default:
                throw GazetteerError.malformed(line: lineNumber, "expected an N, C or P record with its fields")
            }
        }
        var countries: [String: Country] = [:]
        for row in countryRows {
            guard let population = Int(row[4]), let continentName = continents[row[7]] else {
                throw GazetteerError.malformed(line: 0, "country \(row[1]) needs a population and a known continent")
            }
            countries[row[1]] = Country(code: row[1], name: row[2], capital: row[3].isEmpty ? nil : row[3], population: population,
                                        currencyCode: row[5].isEmpty ? nil : row[5], currencyName: row[6].isEmpty ? nil : row[6],
                                        continent: row[7], continentName: continentName, flag: Gazetteer.flag(row[1]))
        }
        return Gazetteer(places: places, alternateNames: alternates, countries: countries)
    }
}
