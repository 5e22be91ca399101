import Contracts
import Foundation
@testable import Geo
import TestThreads
import Testing
import Wire

@Suite("The gazetteer: place names, nearest places, countries", .ownThread)
struct GazetteerTests {
    static let gazetteer: Gazetteer = {
        // The shipped file; a test that cannot read it fails here.
        try! Gazetteer.shared(from: try! Gazetteer.defaultFile())
    }()

    /// Every name of every place by its id, read from the shipped file here, apart from
    /// the code under test: the `P` records' own name and `|`-separated alternates.
    static let namesByID: [String: [String]] = {
        let file = try! Data(contentsOf: try! Gazetteer.defaultFile())
        let text = String(decoding: Gunzip.isGzip(file) ? try! Gunzip.inflate(file) : file, as: UTF8.self)
        var names: [String: [String]] = [:]
        for line in text.split(separator: "\n") where line.hasPrefix("P\t") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            names[String(fields[1])] = [String(fields[2])] + fields[10].split(separator: "|").map(String.init)
        }
        return names
    }()

    /// The best place for `q`, named in `language`; by its own name without one.
    private func first(_ q: String, countryCode: String? = nil, in language: String? = nil) -> String? {
        Self.gazetteer.search(q, countryCode: countryCode, limit: 5, in: language.flatMap { LanguageTag($0) })
            .first.map { "\($0.name) \($0.countryCode)" }
    }

    @Test("names are found whatever the case, accents, punctuation or language they are written in")
    func names() {
        for q in ["Köln", "koln", "KOLN", "Koeln", "Cologne", "cologne", "Кёльн", "科隆"] {
            #expect(first(q) == "Köln DE", "\(q)")
        }
        for q in ["Den Haag", "den haag", "The Hague", "'s-Gravenhage", "s gravenhage", "La Haye"] {
            #expect(first(q) == "The Hague NL", "\(q)")
        }
        #expect(first("Sao Paulo") == "São Paulo BR")
        #expect(first("zurich") == "Zürich CH")
        #expect(first("Утрехт") == "Utrecht NL")
    }

    /// The words of `text` as `TextTerms` defines them: folded (`fold`), split at every
    /// character that is no part of a word (`isWordCharacter`).
    private static func definedWords(_ text: String) -> [String] {
        TextTerms.fold(text).unicodeScalars.split { !TextTerms.isWordCharacter($0) }.map { String(String.UnicodeScalarView($0)) }
    }

    @Test("a name's key is its words as folding defines them, one space between: for every name in the shipped files and awkward text")
    func keys() throws {
        let file = try Gazetteer.defaultFile()
        var names = ["", "  ", "-", "  Café--Bar  Köln ", "'s-Gravenhage", "İstanbul", "Straße", "½ Ⅻ", "e\u{301}", "\u{301}x",
                     "Ｋöln", "Den\u{00A0}Haag", "科隆 市", "🇳🇱 Amsterdam!", "São\tPaulo\n", "ÆØÅ æøå", "Ελλάδα", "Кёльн-2"]
        for url in [file, GazetteerFile.companion(of: file)] {
            let text = String(decoding: try Gunzip.inflate(try Data(contentsOf: url)), as: UTF8.self)
            for line in text.split(separator: "\n") {
                let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
                switch fields.first {
                case "P": names += [String(fields[2])] + fields[10].split(separator: "|").map(String.init)
                case "T": names.append(String(fields[4]))
                default: continue
                }
            }
        }
        #expect(names.count > 250_000)
        for name in names {
            let words = Self.definedWords(name)
            #expect(TextTerms.key(name) == Array(words.joined(separator: " ").utf8), "\(name)")
            #expect(TextTerms.words(name) == words, "\(name)")
        }
    }

    @Test("prefixes match; the whole name beats a prefix, the own name an alternate one, the start a later word; then population")
    func ranking() throws {
        #expect(first("Utrec") == "Utrecht NL")
        #expect(first("amster") == "Amsterdam NL")
        // Paris, France is far larger than Paris, Texas; both are named exactly "Paris".
        #expect(first("Paris") == "Paris FR")
        #expect(first("Paris", countryCode: "US") == "Paris US")
        // "York" is a place's whole name; "New York City" only has it as a later word.
        let york = Self.gazetteer.search("york", limit: 100, in: nil)
        #expect(york.first?.name == "York")
        let yorkNames = york.map(\.name)
        let newYork = try #require(yorkNames.firstIndex(of: "New York City"))
        #expect(yorkNames.firstIndex(of: "Yorkton").map { $0 < newYork } ?? true)
        #expect(first("new york") == "New York City US")
        #expect(first("new york", in: "en") == "New York US")
        // A limit is kept, and every result has a name or a word of one starting with the query.
        let springs = Self.gazetteer.search("spring", limit: 30)
        #expect(springs.count == 30)
        for place in springs {
            let names = Self.namesByID[place.id] ?? []
            let words = names.flatMap { $0.lowercased().split(whereSeparator: { !$0.isLetter && !$0.isNumber }) }
            #expect(words.contains { $0.hasPrefix("spring") }, "\(place.name) does not match spring")
        }
        // Population decides among names of the same quality.
        let exactSpringfields = Self.gazetteer.search("springfield", countryCode: "US", limit: 10).filter { $0.name == "Springfield" }
        #expect(exactSpringfields.count >= 3)
        #expect(exactSpringfields.map(\.population) == exactSpringfields.map(\.population).sorted(by: >))
        #expect(Self.gazetteer.search("Qxqzzv", limit: 10).isEmpty)
    }

    @Test("the nearest place to a point equals the nearest by brute force, across 180° and near the poles")
    func reverse() throws {
        let köln = try #require(Self.gazetteer.nearest(lat: 50.93333, lon: 6.95, in: LanguageTag("de")!))
        #expect(köln.place.name == "Köln" && köln.place.nameLang == "de")
        #expect(köln.place.timezone == "Europe/Berlin")
        #expect(köln.distance < 1)
        var generator = SystemRandomNumberGenerator()
        var points: [(Double, Double)] = [(-16.8, 179.99), (-16.8, -179.99), (89.9, 0), (-89.9, 45), (78.2, 15.6), (0, 0)]
        for _ in 0..<200 {
            points.append((Double.random(in: -90...90, using: &generator), Double.random(in: -180...180, using: &generator)))
        }
        let places = Self.gazetteer.places
        for (lat, lon) in points {
            let found = try #require(Self.gazetteer.nearest(lat: lat, lon: lon))
            let best = places.indices.min { a, b in
                let da = Sphere.distance(lat1: lat, lon1: lon, lat2: places[a].lat, lon2: places[a].lon)
                let db = Sphere.distance(lat1: lat, lon1: lon, lat2: places[b].lat, lon2: places[b].lon)
                return da != db ? da < db : a < b
            }!
            let bestDistance = Sphere.distance(lat1: lat, lon1: lon, lat2: places[best].lat, lon2: places[best].lon)
            // The same place, or one exactly as far (the chord and the haversine may order a tie differently).
            #expect(found.place.id == places[best].id || abs(found.distance - bestDistance) < 1e-6, "\(lat),\(lon)")
        }
    }

    @Test("the shipped file is gzip; a cut-off one is refused with a reason, not read in part")
    func compressed() throws {
        let file = try Data(contentsOf: try Gazetteer.defaultFile())
        #expect(Gunzip.isGzip(file))
        let text = String(decoding: try Gunzip.inflate(file), as: UTF8.self)
        #expect(text.hasPrefix("# Hereabouts gazetteer 2") && text.contains("\nP\t2886242\tKöln\tde\t"))
        #expect(throws: GazetteerError.self) { try Gunzip.inflate(file.prefix(file.count / 2)) }
        // Names in other languages lie beside it, in a file of their own read with it.
        let names = GazetteerFile.companion(of: try Gazetteer.defaultFile())
        #expect(names.lastPathComponent == "gazetteer-names.tsv.gz")
        #expect(String(decoding: try Gunzip.inflate(try Data(contentsOf: names)), as: UTF8.self).contains("\nT\tde\tP\t2867714\tMünchen\n"))
        #expect(GazetteerFile.companion(of: URL(fileURLWithPath: "/x/places.tsv")).path == "/x/places-names.tsv")
    }

    @Test("countries have their capital, currency, continent and flag")
    func countries() throws {
        let nl = try #require(Self.gazetteer.country(code: "nl"))
        #expect(nl == Country(code: "NL", name: "Netherlands", capital: "Amsterdam", population: nl.population, currencyCode: "EUR",
                              currencyName: "Euro", continent: "EU", continentName: "Europe", flag: "🇳🇱"))
        #expect(nl.population > 15_000_000)
        #expect(Self.gazetteer.country(code: "JP")?.flag == "🇯🇵")
        #expect(Self.gazetteer.country(code: "BR")?.continentName == "South America")
        // Antarctica has no capital and no currency of its own.
        let aq = try #require(Self.gazetteer.country(code: "AQ"))
        #expect(aq.capital == nil && aq.currencyCode == nil && aq.continentName == "Antarctica")
    }

    @Test("names in the language asked for, along the tag and then English; places by their own name where the data has no other")
    func languages() throws {
        func country(_ lang: String) throws -> Country { try #require(Self.gazetteer.country(code: "NL", in: LanguageTag(lang)!)) }
        let german = try country("de")
        #expect([german.name, german.currencyName, german.continentName, german.capital] == ["Niederlande", "Euro", "Europa", "Amsterdam"])
        // The data's German name of the euro is its English one, and the reply says the name it gave is English.
        #expect([german.nameLang, german.currencyNameLang, german.continentNameLang] == ["de", "en", "de"])
        #expect(try country("de-AT").name == "Niederlande" && country("de-AT").nameLang == "de")
        #expect(try country("fr").name == "Pays-Bas")
        #expect(try country("fr-CA").currencyName == "euro")
        let unknown = try country("xx-YY")
        #expect(unknown.name == "Netherlands" && unknown.nameLang == "en" && unknown.continentName == "Europe")
        // A capital is a place, named like one.
        #expect(try #require(Self.gazetteer.country(code: "DE", in: LanguageTag("fr")!)).capital == "Berlin")
        #expect(try #require(Self.gazetteer.country(code: "BE", in: LanguageTag("nl")!)).capital == "Brussel")
        // Köln: in German its own name, in English Cologne, in Chinese 科隆, in Dutch
        // Keulen; in a language the data lacks for Köln, its own name again.
        func köln(_ lang: String) throws -> Place { try #require(Self.gazetteer.nearest(lat: 50.93333, lon: 6.95, in: LanguageTag(lang)!)).place }
        #expect(try köln("de").name == "Köln" && köln("de").nameLang == "de")
        #expect(try köln("en").name == "Cologne" && köln("en").nameLang == "en")
        #expect(try köln("zh-Hans-CN").name == "科隆" && köln("zh-Hans-CN").nameLang == "zh")
        #expect(try köln("nl").name == "Keulen" && köln("nl").nameLang == "nl")
        #expect(try köln("xx").name == "Köln" && köln("xx").nameLang == "de")
    }

    @Test("the restaurant app's cities in German, French, Spanish and Italian, from libgeonames' catalogues and GeoNames' preferred names")
    func europeanNames() throws {
        let expected: [(query: String, de: String, fr: String, es: String, it: String)] = [
            ("Munich", "München", "Munich", "Múnich", "Monaco di Baviera"),
            ("Milan", "Mailand", "Milan", "Milán", "Milano"),
            ("Vienna", "Wien", "Vienne", "Viena", "Vienna"),
            ("Cologne", "Köln", "Cologne", "Colonia", "Colonia"),
            ("The Hague", "Den Haag", "La Haye", "La Haya", "L'Aia"),
        ]
        for city in expected {
            for (lang, name) in [("de", city.de), ("fr", city.fr), ("es", city.es), ("it", city.it)] {
                let found = first(city.query, in: lang)
                #expect(found?.hasPrefix(name + " ") == true, "\(city.query) in \(lang): \(found ?? "nothing")")
            }
        }
        // And found by those names, in any language asked.
        #expect(first("Mailand", in: "en") == "Milan IT")
        #expect(first("den haag", in: "de") == "Den Haag NL")
        #expect(first("Monaco di Baviera", in: "it") == "Monaco di Baviera DE")
    }

    @Test("through the socket: places.search, places.reverse, countries.get, and a place as the centre of a search")
    func socket() throws {
        let geo = try GeoFixture()
        let places = try geo.client.call(GeoAPI.placesSearch, PlacesSearchRequest(q: "den haag"))
        #expect(places.places.first?.id == "2747373")
        #expect(places.places.first?.admin1 == "11")
        let limited = try geo.client.call(GeoAPI.placesSearch, PlacesSearchRequest(q: "san", countryCode: "es", limit: 3)).places
        #expect(limited.count == 3 && limited.allSatisfy { $0.countryCode == "ES" })

        let reverse = try geo.client.call(GeoAPI.placesReverse, PlacesReverseRequest(lat: 52.0908, lon: 5.1222))
        #expect(reverse.place.name == "Utrecht" && reverse.place.timezone == "Europe/Amsterdam")
        #expect(try geo.client.call(GeoAPI.countriesGet, CountryRequest(code: "de")).country.flag == "🇩🇪")

        let owner = try geo.user()
        let burger = try geo.create(PostDraft(kind: "restaurant", title: "Burger Utrecht", lat: 52.09, lon: 5.12), token: owner.token)
        _ = try geo.create(PostDraft(kind: "restaurant", title: "Burger Den Haag", lat: 52.08, lon: 4.30), token: owner.token)
        try geo.catchUp()
        let search = try geo.client.call(GeoAPI.search, SearchRequest(lat: nil, lon: nil, place: "utrecht", radius: 5_000, q: "burger"))
        #expect(search.hits.map(\.id) == [burger.id])
        #expect(search.center.place?.id == "2745912")
        #expect(search.center.lat == search.center.place?.lat)
        // Given a point, the reply names no place.
        let byPoint = try geo.client.call(GeoAPI.search, SearchRequest(lat: 52.09, lon: 5.12, radius: 5_000))
        #expect(byPoint.center == SearchReply.Center(lat: 52.09, lon: 5.12))

        let me = try geo.user(), diver = try geo.user()
        _ = try geo.authClient.call(AuthAPI.locationSet, LocationSetRequest(lat: 52.08, lon: 4.31, discoverable: true), token: diver.token)
        try geo.catchUpWithAuth()
        let near = try geo.client.call(GeoAPI.usersNear, UsersNearRequest(lat: nil, lon: nil, place: "Den Haag", radius: 10_000),
                                       token: me.token)
        #expect(near.users.map(\.userId) == [diver.id])
        #expect(near.center.place?.name == "The Hague")

        // `lang` names the places and the country of each op; a tag that is no tag is refused.
        let german = try geo.client.call(GeoAPI.countriesGet, CountryRequest(code: "nl", lang: "de")).country
        #expect([german.name, german.currencyName, german.continentName] == ["Niederlande", "Euro", "Europa"])
        #expect(try geo.client.call(GeoAPI.countriesGet, CountryRequest(code: "nl", lang: "fr")).country.name == "Pays-Bas")
        #expect(try geo.client.call(GeoAPI.countriesGet, CountryRequest(code: "nl", lang: "tlh")).country.name == "Netherlands")
        #expect(try geo.client.call(GeoAPI.placesReverse, PlacesReverseRequest(lat: 50.9333, lon: 6.95, lang: "de")).place.name == "Köln")
        #expect(try geo.client.call(GeoAPI.placesReverse, PlacesReverseRequest(lat: 50.9333, lon: 6.95, lang: "en")).place.name == "Cologne")
        // At Cologne's cathedral the nearest place is a district, and the town it is part of comes with it.
        let cathedral = try geo.client.call(GeoAPI.placesReverse, PlacesReverseRequest(lat: 50.9413, lon: 6.9583, lang: "de"))
        #expect(cathedral.place.name == "Altstadt Nord" && cathedral.town?.name == "Köln", "\(cathedral)")
        #expect(try geo.client.call(GeoAPI.placesReverse, PlacesReverseRequest(lat: 50.9413, lon: 6.9583, lang: "en")).town?.name == "Cologne")
        #expect(try geo.client.call(GeoAPI.placesReverse, PlacesReverseRequest(lat: 50.9333, lon: 6.95, lang: "de")).town == nil,
                "a town is no district of anything")
        #expect(try geo.client.call(GeoAPI.placesSearch, PlacesSearchRequest(q: "koln", lang: "es")).places.first?.name == "Colonia")
        let inGerman = try geo.client.call(GeoAPI.search, SearchRequest(lat: nil, lon: nil, place: "Cologne", radius: 1_000, lang: "de-CH"))
        #expect(inGerman.center.place?.name == "Köln" && inGerman.center.place?.nameLang == "de")
        #expect(geo.failure(GeoAPI.countriesGet, CountryRequest(code: "nl", lang: "not a tag"))?.summary == "invalid_argument lang")
        #expect(geo.failure(GeoAPI.search, SearchRequest(lat: 52, lon: 5, radius: 100, lang: "x"))?.summary == "invalid_argument lang")
    }
}
