import ArgumentParser
import Contracts
import Foundation
import Gateway
import Wire

/// `--sort` as people write it (no leading `-`, which would read as a flag).
enum SortArgument: String, ExpressibleByArgument, CaseIterable {
    case distance, name, nameDesc = "name-desc", newest, rating

    var protocolValue: SearchSort {
        switch self {
        case .distance: .distance
        case .name: .title
        case .nameDesc: .titleDescending
        case .newest: .newest
        case .rating: .rating
        }
    }
}

/// `--lang`: the language of place and country names.
struct LanguageOptions: ParsableArguments {
    @Option(help: "The language of place and country names (BCP 47, e.g. de or pt-BR); by default LC_ALL's, LC_MESSAGES's or LANG's.")
    var lang: String?

    var tag: String? { LanguageArgument.tag(flag: lang) }
}

/// The gazetteer's best match for a name, as geo itself resolves `place`.
func bestPlace(named name: String, lang: String? = nil, _ gateway: Gateway) throws -> Place {
    guard let place = try gateway.call(GeoAPI.placesSearch, PlacesSearchRequest(q: name, limit: 1, lang: lang), token: .none).places.first else {
        throw GatewayError("no place is called \"\(name)\"")
    }
    return place
}

/// A point for ops that take only `lat`/`lon`: a place name goes through the gazetteer first.
func coordinates(of point: PointArgument, _ gateway: Gateway) throws -> (lat: Double, lon: Double, place: Place?) {
    switch point {
    case .coordinates(let lat, let lon): return (lat, lon, nil)
    case .place(let name):
        let place = try bestPlace(named: name, gateway)
        return (place.lat, place.lon, place)
    }
}

func hitRows(_ hits: [Hit]) -> [[String]] {
    hits.map { hit in
        let rating = hit.rating.average.map { String(format: "%.1f★ (%d)", $0, hit.rating.count) } ?? "-"
        return [hit.distance.map(Output.distance) ?? "-", Output.highlighted(hit.title, hit.highlights?.title ?? []), hit.kind, hit.openStatus?.replacingOccurrences(of: "_", with: " ") ?? "-",
                rating, hit.id]
    }
}

let hitHeader = ["DISTANCE", "TITLE", "KIND", "OPEN", "RATING", "ID"]

func placeLabel(_ place: Place) -> String { "\(place.name) (\(place.countryCode))" }

struct Search: GatewayCommand {
    static let configuration = CommandConfiguration(
        abstract: "Posts matching every term within a radius of a place or point.",
        discussion: "Example: here search burger --near Utrecht --radius 5km --open-now")
    @OptionGroup var options: CommonOptions
    @OptionGroup var language: LanguageOptions
    @Argument(help: "Terms; all must match (the last may be the start of a word); shown bold in the titles on a terminal.")
    var terms: [String] = []
    @Option(help: "PLACE or LAT,LON.") var near: String
    @Option(help: "5km, 500m or metres (default 5km).") var radius = "5km"
    @Option(help: "Only this kind (repeatable).") var kind: [String] = []
    @Option(help: "Only posts with this tag (repeatable; all must match).") var tag: [String] = []
    @Flag(help: "Only posts open now (or closing soon).") var openNow = false
    @Option(help: "Judge opening hours at this instant (RFC 3339, e.g. 2026-11-23T12:00:00Z) instead of now.") var time: String?
    @Option(help: "distance, name, name-desc, newest or rating.") var sort: SortArgument = .distance
    @Option(help: "Hits per page (1–100).") var limit = 20
    @Flag(help: "Fetch every page.") var pageAll = false
    @Flag(help: "Keep watching: print each post that enters, changes or leaves the results until Ctrl-C (needs a session).")
    var watch = false

    func execute(_ gateway: Gateway) throws {
        var request: SearchRequest
        switch PointArgument(near) {
        case .coordinates(let lat, let lon): request = SearchRequest(lat: lat, lon: lon, radius: try DistanceArgument.metres(radius))
        case .place(let name): request = SearchRequest(lat: nil, lon: nil, place: name, radius: try DistanceArgument.metres(radius))
        }
        request.q = terms.isEmpty ? nil : terms.joined(separator: " ")
        request.kinds = kind.isEmpty ? nil : kind
        request.tags = tag.isEmpty ? nil : tag
        request.openNow = openNow ? true : nil
        if let time {
            guard let instant = Timestamp.parse(time) else { throw GatewayError("--time takes an RFC 3339 instant, e.g. 2026-11-23T12:00:00Z") }
            request.at = instant
        }
        request.sort = sort.protocolValue
        request.limit = limit
        request.lang = language.tag
        if watch {
            guard request.at == nil, !pageAll else { throw GatewayError("--watch follows the present: leave out --time and --page-all") }
            return try LiveSearch(gateway: gateway, request: WatchOpenRequest(search: request), json: options.json) { opened in
                if options.json { return try Output.json(opened) }
                let center = opened.center ?? SearchReply.Center(lat: 0, lon: 0)
                let hits = opened.hits ?? []
                print("\(hits.count) within \(Output.distance(request.radius)) of \(center.place.map(placeLabel) ?? "\(center.lat),\(center.lon)")")
                if !hits.isEmpty { Output.table(hitHeader, hitRows(hits)) }
            }.run()
        }
        var reply = try gateway.call(GeoAPI.search, request)
        var hits = reply.hits
        while pageAll, let next = reply.nextCursor {
            request.cursor = next
            reply = try gateway.call(GeoAPI.search, request)
            hits += reply.hits
        }
        if options.json {
            reply.hits = hits
            reply.nextCursor = pageAll ? nil : reply.nextCursor
            return try Output.json(reply)
        }
        let around = reply.center.place.map(placeLabel) ?? "\(reply.center.lat),\(reply.center.lon)"
        print("\(hits.count) within \(Output.distance(request.radius)) of \(around)\(reply.nextCursor == nil ? "" : " (more: --page-all)")")
        if !hits.isEmpty { Output.table(hitHeader, hitRows(hits)) }
    }
}

struct Nearest: GatewayCommand {
    static let configuration = CommandConfiguration(abstract: "The k posts nearest a place or point.")
    @OptionGroup var options: CommonOptions
    @Option(help: "PLACE or LAT,LON.") var near: String
    @Option(name: .customShort("k"), help: "How many (1–100).") var k = 10
    @Option(help: "Only this kind (repeatable).") var kind: [String] = []
    @Argument(help: "Terms; all must match.") var terms: [String] = []

    func execute(_ gateway: Gateway) throws {
        let point = try coordinates(of: PointArgument(near), gateway)
        let reply = try gateway.call(GeoAPI.nearest, NearestRequest(lat: point.lat, lon: point.lon, k: k,
                                                                    q: terms.isEmpty ? nil : terms.joined(separator: " "),
                                                                    kinds: kind.isEmpty ? nil : kind))
        if options.json { return try Output.json(reply) }
        Output.table(hitHeader, hitRows(reply.hits))
    }
}

struct Within: GatewayCommand {
    static let configuration = CommandConfiguration(abstract: "Posts in a map box MINLAT,MINLON,MAXLAT,MAXLON (MINLON > MAXLON crosses 180°).")
    @OptionGroup var options: CommonOptions
    @Argument var box: String
    @Argument(help: "Terms; all must match.") var terms: [String] = []
    @Option var kind: [String] = []
    @Option var limit = 100
    @Flag(help: "Keep watching: print each post that enters, changes or leaves the box until Ctrl-C (needs a session).")
    var watch = false

    func execute(_ gateway: Gateway) throws {
        let parts = box.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
        guard parts.count == 4 else { throw GatewayError("a box is MINLAT,MINLON,MAXLAT,MAXLON, e.g. 52.0,5.0,52.2,5.3") }
        let request = WithinRequest(minLat: parts[0], minLon: parts[1], maxLat: parts[2], maxLon: parts[3], kinds: kind.isEmpty ? nil : kind,
                                    q: terms.isEmpty ? nil : terms.joined(separator: " "), limit: limit)
        if watch {
            return try LiveSearch(gateway: gateway, request: WatchOpenRequest(within: request), json: options.json) { opened in
                if options.json { return try Output.json(opened) }
                Output.table(["LAT,LON", "TITLE", "KIND", "ID"], (opened.hits ?? []).map { ["\($0.lat),\($0.lon)", $0.title, $0.kind, $0.id] })
            }.run()
        }
        let reply = try gateway.call(GeoAPI.within, request)
        if options.json { return try Output.json(reply) }
        Output.table(["LAT,LON", "TITLE", "KIND", "ID"], reply.hits.map { ["\($0.lat),\($0.lon)", $0.title, $0.kind, $0.id] })
    }
}

struct PlaceCommand: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "place", abstract: "Places by name (any language, accents optional).")
    @OptionGroup var options: CommonOptions
    @OptionGroup var language: LanguageOptions
    @Argument(help: "A name or its start.") var name: [String]
    @Option(help: "Only this country (ISO code).") var country: String?
    @Option(help: "How many (1–100).") var limit = 10

    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(GeoAPI.placesSearch, PlacesSearchRequest(q: name.joined(separator: " "), countryCode: country,
                                                                              limit: limit, lang: language.tag), token: .none)
        if options.json { return try Output.json(reply) }
        guard !reply.places.isEmpty else { throw GatewayError("no place matches \"\(name.joined(separator: " "))\"") }
        Output.table(["NAME", "COUNTRY", "ADMIN1", "LAT,LON", "POPULATION", "TIME ZONE", "ID"],
                     reply.places.map { [$0.name, $0.countryCode, $0.admin1 ?? "-", "\($0.lat),\($0.lon)", "\($0.population)", $0.timezone, $0.id] })
    }
}

struct CountryCommand: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "country", abstract: "A country's facts, with its flag.")
    @OptionGroup var options: CommonOptions
    @OptionGroup var language: LanguageOptions
    @Argument(help: "ISO 3166-1 alpha-2 code, e.g. NL.") var code: String

    func execute(_ gateway: Gateway) throws {
        let country = try gateway.call(GeoAPI.countriesGet, CountryRequest(code: code, lang: language.tag), token: .none).country
        if options.json { return try Output.json(CountryReply(country: country)) }
        print("\(country.flag) \(country.name) (\(country.code)), \(country.continentName)")
        print("capital \(country.capital ?? "-"), population \(country.population), currency \(country.currencyCode ?? "-") \(country.currencyName ?? "")")
    }
}
