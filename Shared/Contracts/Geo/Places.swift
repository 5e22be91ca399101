import Foundation
import Wire

/// A place of the gazetteer: a town or city of 15,000 people or more (GeoNames).
public struct Place: Codable, Sendable, Equatable {
    /// The GeoNames id, as a string.
    public var id: String
    public var name: String
    public var countryCode: String
    /// The GeoNames code of the first-level division (a state, province or region)
    /// within the country, e.g. `09` for Utrecht in NL; nil where GeoNames has none.
    public var admin1: String?
    public var lat: Double
    public var lon: Double
    public var population: Int
    /// IANA time zone.
    public var timezone: String

    public init(id: String, name: String, countryCode: String, admin1: String?, lat: Double, lon: Double, population: Int,
                timezone: String) {
        self.id = id
        self.name = name
        self.countryCode = countryCode
        self.admin1 = admin1
        self.lat = lat
        self.lon = lon
        self.population = population
        self.timezone = timezone
    }

    enum CodingKeys: String, CodingKey {
        case id, name, countryCode, admin1, lat, lon, population, timezone
    }

    /// Every field is written, an absent `admin1` as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(name, forKey: .name)
        try container.encode(countryCode, forKey: .countryCode)
        try container.encode(admin1, forKey: .admin1)
        try container.encode(lat, forKey: .lat)
        try container.encode(lon, forKey: .lon)
        try container.encode(population, forKey: .population)
        try container.encode(timezone, forKey: .timezone)
    }
}

public struct Country: Codable, Sendable, Equatable {
    /// ISO 3166-1 alpha-2.
    public var code: String
    public var name: String
    public var capital: String?
    public var population: Int
    /// ISO 4217.
    public var currencyCode: String?
    public var currencyName: String?
    /// `AF`, `AN`, `AS`, `EU`, `NA`, `OC`, `SA`.
    public var continent: String
    public var continentName: String
    /// The two regional indicator symbols of `code`, which phones draw as a flag.
    public var flag: String

    public init(code: String, name: String, capital: String?, population: Int, currencyCode: String?, currencyName: String?,
                continent: String, continentName: String, flag: String) {
        self.code = code
        self.name = name
        self.capital = capital
        self.population = population
        self.currencyCode = currencyCode
        self.currencyName = currencyName
        self.continent = continent
        self.continentName = continentName
        self.flag = flag
    }

    enum CodingKeys: String, CodingKey {
        case code, name, capital, population, currencyCode, currencyName, continent, continentName, flag
    }

    /// Every field is written, absent ones as `null`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(code, forKey: .code)
        try container.encode(name, forKey: .name)
        try container.encode(capital, forKey: .capital)
        try container.encode(population, forKey: .population)
        try container.encode(currencyCode, forKey: .currencyCode)
        try container.encode(currencyName, forKey: .currencyName)
        try container.encode(continent, forKey: .continent)
        try container.encode(continentName, forKey: .continentName)
        try container.encode(flag, forKey: .flag)
    }
}

public struct PlacesSearchRequest: ValidatedBody, Equatable {
    public var q: String
    public var countryCode: String?
    public var limit: Int?

    public init(q: String, countryCode: String? = nil, limit: Int? = nil) {
        self.q = q
        self.countryCode = countryCode
        self.limit = limit
    }

    public func validate() throws {
        try GeoRules.placeName(q, field: "q")
        if let countryCode { _ = try CatalogueRules.countryCode(countryCode, field: "countryCode") }
        _ = try Check.limit(limit, default: GeoRules.placesDefaultLimit)
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

    public init(lat: Double, lon: Double) {
        self.lat = lat
        self.lon = lon
    }

    public func validate() throws {
        try Check.latitude(lat)
        try Check.longitude(lon)
    }
}

public struct PlaceReverseReply: Codable, Sendable, Equatable {
    /// The nearest place; its `timezone` is the point's time zone as far as the
    /// gazetteer knows it.
    public var place: Place
    /// Metres from the point to the place.
    public var distance: Double

    public init(place: Place, distance: Double) {
        self.place = place
        self.distance = distance
    }
}

public struct CountryRequest: ValidatedBody, Equatable {
    /// ISO 3166-1 alpha-2, any case.
    public var code: String
    public init(code: String) { self.code = code }

    public func validate() throws {
        _ = try CatalogueRules.countryCode(code, field: "code")
    }
}

public struct CountryReply: Codable, Sendable, Equatable {
    public var country: Country
    public init(country: Country) { self.country = country }
}
