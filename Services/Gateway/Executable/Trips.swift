import ArgumentParser
import Contracts
import Foundation
import Gateway
import StackClient
import Wire

func localDate(_ text: String, _ flag: String) throws -> LocalDate {
    guard let date = LocalDate(text) else { throw GatewayError("\(flag) takes a date as YYYY-MM-DD, got \"\(text)\"") }
    return date
}

struct TripCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trip", abstract: "Private trips shared with buddies.",
        subcommands: [TripCreate.self, TripList.self, TripShow.self, TripInvite.self, TripAccept.self, TripLeave.self, TripRemove.self, TripICS.self])
}

struct TripCreate: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "create", abstract: "Plan a trip to a city.")
    @OptionGroup var options: CommonOptions
    @Option(help: "The city (a place name).") var to: String
    @Option(help: "First day, YYYY-MM-DD.") var from: String
    @Option(help: "Last day, YYYY-MM-DD.") var until: String
    @Option(help: "Default: the city's name.") var title: String?

    func execute(_ gateway: Gateway) throws {
        let place = try bestPlace(named: to, gateway)
        let request = CreateTripRequest(title: title ?? place.name, city: place.name, countryCode: place.countryCode, lat: place.lat,
                                        lon: place.lon, start: try localDate(from, "--from"), end: try localDate(until, "--until"))
        let trip = try gateway.call(CatalogueAPI.createTrip, request, token: .required).trip
        if options.json { return try Output.json(TripReply(trip: trip)) }
        print("Trip \(trip.id): \(trip.title), \(trip.city) (\(trip.countryCode)), \(from) – \(until)")
    }
}

struct TripList: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Your trips, those you joined and those you are invited to.")
    @OptionGroup var options: CommonOptions
    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(CatalogueAPI.listTrips, Empty(), token: .required)
        if options.json { return try Output.json(reply) }
        Output.table(["DATES", "TITLE", "CITY", "YOU", "ID"], reply.trips.map {
            ["\($0.start?.description ?? "?") – \($0.end?.description ?? "?")", $0.title, "\($0.city), \($0.countryCode)",
             $0.role == .invited ? "invited (here trip accept \($0.id))" : $0.role?.rawValue ?? "", $0.id]
        })
    }
}

struct TripShow: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "A trip: country facts with flag, the city's tips by category, buddies.")
    @OptionGroup var options: CommonOptions
    @OptionGroup var language: LanguageOptions
    @Argument var id: String

    struct Details: Encodable {
        var trip: Trip
        var country: Country?
        var tips: [Post]
    }

    func execute(_ gateway: Gateway) throws {
        let trip = try gateway.call(CatalogueAPI.getTrip, IDRequest(id: id), token: .required).trip
        let country = try? gateway.call(GeoAPI.countriesGet, CountryRequest(code: trip.countryCode, lang: language.tag), token: .none).country
        let tips = try gateway.call(CatalogueAPI.list, ListPostsRequest(kind: "tip", city: trip.city, countryCode: trip.countryCode,
                                                                        limit: 100)).posts
        if options.json { return try Output.json(Details(trip: trip, country: country, tips: tips)) }
        print("\(trip.title): \(trip.city), \(trip.start?.description ?? "?") – \(trip.end?.description ?? "?")")
        if let country {
            print("\(country.flag) \(country.name): capital \(country.capital ?? "-"), currency \(country.currencyCode ?? "-"), \(country.continentName)")
        }
        let byCategory = Dictionary(grouping: tips) { $0.category ?? "other" }
        for category in byCategory.keys.sorted() {
            print("\(category):")
            for tip in byCategory[category] ?? [] { print("  \(tip.title)\(tip.text.isEmpty ? "" : " — \(tip.text)")") }
        }
        let members = trip.members ?? []
        let profiles = members.isEmpty ? [] : try gateway.call(AuthAPI.usersGet, UsersGetRequest(ids: members.map(\.userId))).users
        let names = Dictionary(profiles.map { ($0.id, $0.displayName ?? $0.username ?? $0.id) }) { a, _ in a }
        print("buddies: " + members.map { "\(names[$0.userId] ?? $0.userId) (\($0.role == .invited ? "invited, not yet joined" : $0.role.rawValue))" }
            .joined(separator: ", "))
    }
}

struct TripInvite: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "invite", abstract: "Invite a buddy by email.")
    @OptionGroup var options: CommonOptions
    @Argument var id: String
    @Argument var email: String
    func execute(_ gateway: Gateway) throws {
        let user = try gateway.call(AuthAPI.usersLookup, UsersLookupRequest(email: email), token: .required).user
        let reply = try gateway.call(CatalogueAPI.invite, InviteRequest(id: id, userId: user.id), token: .required)
        try confirm(options, reply, "Invited \(user.displayName ?? user.username ?? email)")
    }
}

struct TripAccept: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "accept", abstract: "Join a trip you are invited to.")
    @OptionGroup var options: CommonOptions
    @Argument var id: String
    func execute(_ gateway: Gateway) throws {
        let reply = try gateway.call(CatalogueAPI.acceptTrip, IDRequest(id: id), token: .required)
        try confirm(options, reply, "Joined \(reply.trip.title)")
    }
}

struct TripLeave: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "leave", abstract: "Leave a trip you joined, or decline an invitation.")
    @OptionGroup var options: CommonOptions
    @Argument var id: String
    func execute(_ gateway: Gateway) throws {
        try confirm(options, try gateway.call(CatalogueAPI.leaveTrip, IDRequest(id: id), token: .required), "Left \(id)")
    }
}

struct TripRemove: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "rm", abstract: "Delete a trip of yours.")
    @OptionGroup var options: CommonOptions
    @Argument var id: String
    func execute(_ gateway: Gateway) throws {
        try confirm(options, try gateway.call(CatalogueAPI.deleteTrip, IDRequest(id: id), token: .required), "Deleted \(id)")
    }
}

struct TripICS: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "ics", abstract: "The trip as an iCalendar (RFC 5545) all-day event.")
    @OptionGroup var options: CommonOptions
    @Argument var id: String
    @Option(name: .shortAndLong, help: "Write to this file instead of stdout.") var output: String?

    func execute(_ gateway: Gateway) throws {
        let trip = try gateway.call(CatalogueAPI.getTrip, IDRequest(id: id), token: .required).trip
        guard let event = ICalendarEvent(trip: trip) else { throw GatewayError("trip \(trip.id) has no dates to put in a calendar") }
        if let output {
            try Data(event.text.utf8).write(to: URL(fileURLWithPath: output))
            try confirm(options, ["path": output], "Wrote \(output)")
        } else if options.json {
            try Output.json(["ics": event.text])
        } else {
            FileHandle.standardOutput.write(Data(event.text.utf8))
        }
    }
}

struct Tip: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Travel tips by city and category.", subcommands: [TipAdd.self])
}

struct TipAdd: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "add", abstract: "Add a tip (a post of kind tip) for a city.")
    @OptionGroup var options: CommonOptions
    @Option(help: "The city (a place name).") var city: String
    @Option(help: "cafe, museum, food, transport …") var category: String
    @Option var name: String
    @Option var text = ""

    func execute(_ gateway: Gateway) throws {
        let place = try bestPlace(named: city, gateway)
        let draft = PostDraft(kind: "tip", title: name, text: text, lat: place.lat, lon: place.lon, category: category,
                              timezone: place.timezone, place: PostPlace(city: place.name, countryCode: place.countryCode))
        let post = try gateway.call(CatalogueAPI.create, CreatePostRequest(draft), token: .required).post
        if options.json { return try Output.json(PostReply(post: post)) }
        print("Tip \(post.id) for \(place.name): \(name) (\(category))")
    }
}
