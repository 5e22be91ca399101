import Contracts
import Foundation

/// Reads the tab-separated gazetteer file, gzipped as shipped or plain (its format is
/// described in `Services/Geo/Gazetteer/derive_gazetteer.py`).
///
/// It is read at every start of geo, so it is parsed over the raw bytes: a line's
/// fields are byte ranges and become Strings only where they are kept, and the few
/// hundred language tags of its ~235,000 `T` records are checked once each.
enum GazetteerFile {
    /// Reads `url` and, when one lies beside it, its companion of names in other
    /// languages (`gazetteer.tsv.gz` and `gazetteer-names.tsv.gz`, as shipped: two
    /// files of about 2 MB rather than one of 4.4), as one gazetteer. Records may be in
    /// either file.
    static func read(_ url: URL) throws -> Gazetteer {
        var records = Records()
        for file in [url, companion(of: url)] where file == url || FileManager.default.fileExists(atPath: file.path) {
            let data = try Data(contentsOf: file)
            let text = Gunzip.isGzip(data) ? try Gunzip.inflate(data) : data
            try text.withUnsafeBytes { try records.parse($0.bindMemory(to: UInt8.self)) }
        }
        return try records.gazetteer()
    }

    /// `gazetteer.tsv.gz` → `gazetteer-names.tsv.gz`; `places.tsv` → `places-names.tsv`.
    static func companion(of url: URL) -> URL {
        let name = url.lastPathComponent
        let suffix = [".tsv.gz", ".tsv"].first { name.hasSuffix($0) } ?? ""
        return url.deletingLastPathComponent().appendingPathComponent(name.dropLast(suffix.count) + "-names" + suffix)
    }

    /// What the files hold, gathered record by record.
    private struct Records {
        var continents: [String: String] = [:]
        var countryRows: [[String]] = []
        var places: [Place] = []
        var alternates: [[String]] = []
        // A section's town, by geonameid (the 12th field of a P record).
        var townIds: [String?] = []
        var translations = Translations()
        // Places' names in other languages, by their key's number in `translations`.
        var translatedPlaceNames: [Int: [String]] = [:]
        // Each tag as written, to its numbers in `translations`; nil when it is no BCP 47 tag.
        var tags: [String: Translations.Tag?] = [:]

        init() {
            places.reserveCapacity(35_000)
            alternates.reserveCapacity(35_000)
            townIds.reserveCapacity(35_000)
            translations.reserveCapacity(240_000)
        }

        mutating func parse(_ bytes: UnsafeBufferPointer<UInt8>) throws {
            var fields: [Range<Int>] = []
            fields.reserveCapacity(12)
            func text(_ range: Range<Int>) -> String { String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self) }
            // The non-empty parts of a field, split at a byte (a String splits by Characters,
            // finding where each one ends).
            func texts(_ range: Range<Int>, separatedBy separator: UInt8) -> [String] {
                var parts: [String] = []
                var partStart = range.lowerBound
                for index in range where bytes[index] == separator {
                    if index > partStart { parts.append(text(partStart..<index)) }
                    partStart = index + 1
                }
                if partStart < range.upperBound { parts.append(text(partStart..<range.upperBound)) }
                return parts
            }

            var lineNumber = 0, start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count && bytes[end] != 0x0A { end += 1 }
                defer { start = end + 1 }
                lineNumber += 1
                guard end > start, bytes[start] != 0x23 else { continue }  // an empty line or a `#` comment
                fields.removeAll(keepingCapacity: true)
                var fieldStart = start
                for i in start..<end where bytes[i] == 0x09 {
                    fields.append(fieldStart..<i)
                    fieldStart = i + 1
                }
                fields.append(fieldStart..<end)
                let record = fields[0].count == 1 ? bytes[start] : 0
                switch (record, fields.count) {
                case (UInt8(ascii: "T"), 5):
                    let written = text(fields[1])
                    let tag = tags[written] ?? {
                        let tag = LanguageTag(written).flatMap { _ in translations.tag(written, lookupTag: written.lowercased()) }
                        tags[written] = tag
                        return tag
                    }()
                    guard let tag, let kind = Translations.Kind(letter: bytes[fields[2].lowerBound]), fields[2].count == 1 else {
                        throw GazetteerError.malformed(
                            line: lineNumber, "a translation needs a language tag (of at most 65,535 in a file) and a kind of C, N, M or P")
                    }
                    let name = text(fields[4])
                    guard let keyNumber = translations.add(kind, key: text(fields[3]), tag: tag, name: name), kind == .place else { continue }
                    translatedPlaceNames[keyNumber, default: []].append(name)
                case (UInt8(ascii: "P"), 11), (UInt8(ascii: "P"), 12):
                    guard let lat = Double(text(fields[6])), let lon = Double(text(fields[7])), let population = Int(text(fields[8])) else {
                        throw GazetteerError.malformed(line: lineNumber, "a place needs numbers for lat, lon and population")
                    }
                    places.append(Place(id: text(fields[1]), name: text(fields[2]), nameLang: text(fields[3]), countryCode: text(fields[4]),
                                        admin1: fields[5].isEmpty ? nil : text(fields[5]), lat: lat, lon: lon, population: population,
                                        timezone: text(fields[9])))
                    alternates.append(texts(fields[10], separatedBy: UInt8(ascii: "|")))
                    townIds.append(fields.count == 12 && !fields[11].isEmpty ? text(fields[11]) : nil)
                case (UInt8(ascii: "N"), 3):
                    continents[text(fields[1])] = text(fields[2])
                case (UInt8(ascii: "C"), 9):
                    countryRows.append(fields.map(text))
                default:
                    throw GazetteerError.malformed(line: lineNumber, "expected an N, C, P or T record with its fields")
                }
            }
        }

        func gazetteer() throws -> Gazetteer {
            var translations = translations
            translations.seal()
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
                             translatedNames: places.map { translations.keyNumber($0.id).flatMap { translatedPlaceNames[$0] } ?? [] },
                             towns: townIds.map { $0.flatMap { slots[$0] } }, countries: countries, translations: translations)
        }
    }
}
