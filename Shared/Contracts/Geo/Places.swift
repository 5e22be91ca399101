import Foundation
import Wire

/// A place of the gazetteer: a town or city of 15,000 people or more (GeoNames).
public struct Place: Codable, Sendable, Equatable {
    /// The GeoNames id, as a string.
    public var id: String
    /// In the language the request asked for where the data names the place in it,
    /// else the place's own name.
    public var name: String
    /// The BCP 47 tag of `name`'s language, as the data has it (`de`, `zh-Hant`).
    public var nameLang: String
    public var countryCode: String
    /// The GeoNames code of the first-level division (a state, province or region)
    /// within the country, e.g. `09` for Utrecht in NL; nil where GeoNames has none.
    public var admin1: String?
    public var lat: Double
    public var lon: Double
    public var population: Int
    /// IANA time zone.
    public var timezone: String

    public init(id: String, name: String, nameLang: String, countryCode: String, admin1: String?, lat: Double, lon: Double,
                population: Int, timezone: String) {
        self.id = id
        self.name = name
        self.nameLang = nameLang
        self.countryCode = countryCode
        self.admin1 = admin1
        self.lat = lat
        self.lon = lon
        self.population = population
        self.timezone = timezone
    }

    enum CodingKeys: String, CodingKey {
        case id, name, nameLang, countryCode, admin1, lat, lon, population, timezone
    }

    /// Every field is written, an absent `admin1` as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(nameLang, forKey: .nameLang)
        try container.encode(countryCode, forKey: .countryCode)
        try container.encode(admin1, forKey: .admin1)
        try container.encode(lat, forKey: .lat)
        try container.encode(lon, forKey: .lon)
        try container.encode(population, forKey: .population)
        try container.encode(timezone, forKey: .timezone)
    }
}

/// A country, its names in the language the request asked for where the data has
/// them (else English; the capital, else its own name); each `…Lang` is the BCP 47
/// tag of the name before it.
public struct Country: Codable, Sendable, Equatable {
    /// ISO 3166-1 alpha-2.
    public var code: String
    public var name: String
    public var nameLang: String
    public var capital: String?
    public var capitalLang: String?
    public var population: Int
    /// ISO 4217.
    public var currencyCode: String?
    public var currencyName: String?
    public var currencyNameLang: String?
    /// `AF`, `AN`, `AS`, `EU`, `NA`, `OC`, `SA`.
    public var continent: String
    public var continentName: String
    public var continentNameLang: String
    /// The two regional indicator symbols of `code`, which phones draw as a flag.
    public var flag: String

    public init(code: String, name: String, nameLang: String = "en", capital: String?, capitalLang: String? = nil,
                population: Int, currencyCode: String?, currencyName: String?, currencyNameLang: String? = nil,
                continent: String, continentName: String, continentNameLang: String = "en", flag: String) {
        self.code = code
        self.name = name
        self.nameLang = nameLang
        self.capital = capital
        self.capitalLang = capitalLang ?? capital.map { _ in "en" }
        self.population = population
        self.currencyCode = currencyCode
        self.currencyName = currencyName
        self.currencyNameLang = currencyNameLang ?? currencyName.map { _ in "en" }
        self.continent = continent
        self.continentName = continentName
        self.continentNameLang = continentNameLang
        self.flag = flag
    }

    enum CodingKeys: String, CodingKey {
        case code, name, nameLang, capital, capitalLang, population, currencyCode, currencyName, currencyNameLang, continent,
             continentName, continentNameLang, flag
    }

    /// Every field is written, absent ones as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(name, forKey: .name)
        try container.encode(nameLang, forKey: .nameLang)
        try container.encode(capital, forKey: .capital)
        try container.encode(capitalLang, forKey: .capitalLang)
        try container.encode(population, forKey: .population)
        try container.encode(currencyCode, forKey: .currencyCode)
        try container.encode(currencyName, forKey: .currencyName)
        try container.encode(currencyNameLang, forKey: .currencyNameLang)
        try container.encode(continent, forKey: .continent)
        try container.encode(continentName, forKey: .continentName)
        try container.encode(continentNameLang, forKey: .continentNameLang)
        try container.encode(flag, forKey: .flag)
    }
}

public struct PlacesSearchRequest: ValidatedBody, Equatable {
    public var q: String
    public var countryCode: String?
    public var limit: Int?
    /// The language of the names in the reply (BCP 47); English when absent.
    public var lang: String?

    public init(q: String, countryCode: String? = nil, limit: Int? = nil, lang: String? = nil) {
        self.q = q
        self.countryCode = countryCode
        self.limit = limit
        self.lang = lang
    }

    public func validate() throws {
        try GeoRules.placeName(q, field: "q")
        if let countryCode { _ = try CatalogueRules.countryCode(countryCode, field: "countryCode") }
        _ = try Check.limit(limit, default: GeoRules.placesDefaultLimit)
        _ = try Check.languageTag(lang)
    }
}

public struct PlacesReply: Codable, Sendable, Equatable {
    /// Best match first: exact names before prefixes, then the larger population.
    public var places: [Place]
    public init(places: [Place]) { self.places = places }
}

public struct PlacesReverseRequest: ValidatedBody, Equatable {
    public var lat: Double
    public var lon: Double
    /// The language of the place's name (BCP 47); English when absent.
    public var lang: String?

    public init(lat: Double, lon: Double, lang: String? = nil) {
        self.lat = lat
        self.lon = lon
        self.lang = lang
    }

    public func validate() throws {
        try Check.latitude(lat)
        try Check.longitude(lon)
        _ = try Check.languageTag(lang)
    }
}

public struct PlaceReverseReply: Codable, Sendable, Equatable {
    /// The nearest place; its `timezone` is the point's time zone as far as the
    /// gazetteer knows it.
    public var place: Place
    /// Metres from the point to the place.
    public var distance: Double
    /// When `place` is a section of a town (a district, `Altstadt Nord`), the town
    /// (`Köln`); absent otherwise.
    public var town: Place?

    public init(place: Place, distance: Double, town: Place? = nil) {
        self.place = place
        self.distance = distance
        self.town = town
    }
}

public struct CountryRequest: ValidatedBody, Equatable {
    /// ISO 3166-1 alpha-2, any case.
    public var code: String
    /// The language of the names in the reply (BCP 47); English when absent.
    public var lang: String?

    public init(code: String, lang: String? = nil) {
        self.code = code
        self.lang = lang
    }

    public func validate() throws {
        _ = try CatalogueRules.countryCode(code, field: "code")
        _ = try Check.languageTag(lang)
    }
}

public struct CountryReply: Codable, Sendable, Equatable {
    public var country: Country
    public init(country: Country) { self.country = country }
}
