import ArgumentParser
import Contracts
import Foundation
import Gateway
import Wire

struct Fence: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Geofences: sights that notify you nearby.",
                                                    subcommands: [FenceCheck.self, FencePlan.self, FenceWatch.self])
}

struct FenceCheck: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "check", abstract: "Report where you are: fences entered and left.")
    @OptionGroup var options: CommonOptions
    @Option(help: "PLACE or LAT,LON.") var at: String

    func execute(_ gateway: Gateway) throws {
        let point = try coordinates(of: PointArgument(at), gateway)
        let reply = try gateway.call(GeoAPI.fencesUpdate, FenceUpdateRequest(lat: point.lat, lon: point.lon), token: .required)
        if options.json { return try Output.json(reply) }
        for id in reply.entered { print("entered \(id)") }
        for id in reply.exited { print("left \(id)") }
        print("inside \(reply.inside.count) fence\(reply.inside.count == 1 ? "" : "s")")
    }
}

struct FencePlan: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "plan", abstract: "The nearest fences (≤ 20) for a phone to watch.")
    @OptionGroup var options: CommonOptions
    @Option(help: "PLACE or LAT,LON.") var at: String
    @Option var max = 20

    func execute(_ gateway: Gateway) throws {
        let point = try coordinates(of: PointArgument(at), gateway)
        let reply = try gateway.call(GeoAPI.fencesPlan, FencePlanRequest(lat: point.lat, lon: point.lon, max: max), token: .none)
        if options.json { return try Output.json(reply) }
        Output.table(["POST", "LAT,LON", "RADIUS"], reply.regions.map { [$0.postId, "\($0.lat),\($0.lon)", Output.distance($0.radius)] })
    }
}

struct FenceWatch: GatewayCommand {
    static let configuration = CommandConfiguration(commandName: "watch", abstract: "Print your fence crossings as they happen (Ctrl-C stops).")
    @OptionGroup var options: CommonOptions

    func execute(_ gateway: Gateway) throws {
        FileHandle.standardError.write(Data("watching for your fence crossings; Ctrl-C stops\n".utf8))
        try gateway.watchOwnEvents(service: GeoAPI.service, topic: GeoAPI.fenceTopic) { body in
            if options.json {
                FileHandle.standardOutput.write(body + Data("\n".utf8))
            } else if let event = try? JSONValueDecoder().decode(FenceEvent.self, from: body) {
                FileHandle.standardOutput.write(Data("\(Timestamp.format(event.at)) \(event.type.rawValue) \(event.postId)\n".utf8))
            }
            return true
        }
    }
}
