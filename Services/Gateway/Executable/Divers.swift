import ArgumentParser
import Contracts
import Foundation
import Gateway
import Wire

struct Divers: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Divers (discoverable users) near a place.", subcommands: [DiversNear.self])
}

struct DiversNear: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "near", abstract: "Users whose home is within a radius, with name and attributes.")
    @OptionGroup var options: CommonOptions
    @OptionGroup var language: LanguageOptions
    @Argument(help: "PLACE or LAT,LON.") var point: String
    @Option(help: "5km, 500m or metres.") var radius = "25km"
    @Option(name: .customLong("attr"), help: "KEY=VALUE that must match (repeatable).") var attrs: [String] = []
    @Option var limit = 20
    @Flag(help: "Keep watching: print each diver who comes near, moves to another band or goes, until Ctrl-C.")
    var watch = false

    func execute(_ gateway: Gateway) throws {
        var request = UsersNearRequest(lat: nil, lon: nil, radius: try DistanceArgument.metres(radius), attributes: try attributes(attrs),
                                       limit: limit, lang: language.tag)
        switch PointArgument(point) {
        case .coordinates(let lat, let lon): (request.lat, request.lon) = (lat, lon)
        case .place(let name): request.place = name
        }
        if watch {
            return try LiveSearch(gateway: gateway, request: WatchOpenRequest(usersNear: request), json: options.json) { opened in
                if options.json { return try Output.json(opened) }
                printList(opened.users ?? [], center: opened.center ?? SearchReply.Center(lat: 0, lon: 0), gateway)
            } line: { event in
                guard let user = event.user else { return "- \(event.userId ?? "?")" }
                return ([event.type == .entered ? "+" : "~"] + (try rows([user], gateway).first ?? [])).joined(separator: "  ")
            }.run()
        }
        let reply = try gateway.call(GeoAPI.usersNear, request, token: .required)
        if options.json { return try Output.json(reply) }
        printList(reply.users, center: reply.center, gateway)
    }

    private func printList(_ users: [NearUser], center: SearchReply.Center, _ gateway: Gateway) {
        print("\(users.count) near \(center.place.map(placeLabel) ?? "\(center.lat),\(center.lon)")")
        Output.table(["DISTANCE", "NAME", "ATTRIBUTES", "ID"], (try? rows(users, gateway)) ?? [])
    }

    /// Each user's distance band, name, attributes and id (profiles from auth).
    private func rows(_ users: [NearUser], _ gateway: Gateway) throws -> [[String]] {
        let profiles = users.isEmpty ? [] : try gateway.call(AuthAPI.usersGet, UsersGetRequest(ids: users.map(\.userId))).users
        let byId = Dictionary(profiles.map { ($0.id, $0) }) { a, _ in a }
        return users.map { user in
            let profile = byId[user.userId]
            let attributes = profile?.attributes.values.sorted { $0.key < $1.key }.map { "\($0.key)=\(describe($0.value))" }
                .joined(separator: " ") ?? ""
            return ["≤ " + Output.distance(user.distance), profile?.displayName ?? profile?.username ?? "-", attributes, user.userId]
        }
    }

    private func describe(_ value: AttributeValue) -> String {
        switch value {
        case .string(let text): text
        case .number(let number): number.rounded() == number ? String(Int64(number)) : String(number)
        case .bool(let flag): String(flag)
        }
    }
}
