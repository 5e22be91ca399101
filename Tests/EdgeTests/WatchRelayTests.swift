import Contracts
import EdgeFixtures
import Foundation
@testable import Edge
@testable import Geo
import ServiceClient
import ServiceKitTesting
import StackFixtures
import TestThreads
import Testing
import Wire

/// The edge's half of live queries against a real geo (with auth and catalogue)
/// in this process: what the edge does when geo's events do not all arrive.
@Suite("The edge's watches against geo", .ownThread)
struct WatchRelayTests {
    @Test("an event lost on the way, with none after it to show the gap, is found at the next renewal: fresh results")
    func lostLastEvent() async throws {
        // Nothing here subscribes to geo's events: every one of them is lost, as one
        // dropped by a full queue or a reconnecting subscriber would be.
        let (upstream, geo, watches) = try Self.relay(renewAfter: 1)
        let channel = OutboxTests.FakeChannel()
        let seller = try upstream.user()
        watches.signedIn(socketID: 1, token: seller.token)
        await watches.open(socketID: 1, key: "map", body: ["search": .object(["lat": 52.09, "lon": 5.12, "radius": 2000])],
                           outbox: channel.outbox())
        #expect(channel.texts.count == 1 && channel.texts[0].contains("\"reset\":false") && channel.texts[0].contains("\"hits\":[]"))

        let bike = try upstream.create(PostDraft(kind: "offer", title: "City bike", lat: 52.092, lon: 5.12), token: seller.token)
        try upstream.wait(for: "geo", to: try upstream.catalogueLastSeq()) { try geo.postFollower.cursor() }
        // Renewals say one event was published; when it has not come a moment later,
        // the watch is opened again and the socket gets the list as it is now.
        let reset = try await eventually("reset after the lost event", seconds: 60) {
            watches.sweep(now: Date().addingTimeInterval(SocketWatches.arrivalGrace + 1))
            return channel.texts.dropFirst().first
        }
        #expect(reset.contains("\"type\":\"watch.opened\"") && reset.contains("\"reset\":true") && reset.contains(bike.id))

        // A watch that has everything geo published is left alone: its renewal finds
        // nothing missing, and the sweep after the grace has nothing to open again.
        for round in 1...3 {
            for renewal in watches.sweep(now: Date().addingTimeInterval(Double(round) * (SocketWatches.arrivalGrace + 1))) {
                await renewal.value
            }
        }
        #expect(channel.texts.count == 2, "\(channel.texts)")
        geo.stop()
    }

    @Test("a burst of opens on one socket opens at most its 20 watches, counting those geo has not answered yet")
    func burstOfOpens() async throws {
        let (upstream, geo, watches) = try Self.relay(renewAfter: 240)
        let channel = OutboxTests.FakeChannel()
        let outbox = channel.outbox()
        let user = try upstream.user()
        watches.signedIn(socketID: 1, token: user.token)
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<45 {
                group.addTask {
                    await watches.open(socketID: 1, key: "w\(index)", body: ["search": .object(["lat": 52.09, "lon": 5.12, "radius": 2000])],
                                       outbox: outbox)
                }
            }
        }
        let opened = channel.texts.filter { $0.contains("\"type\":\"watch.opened\"") }
        let refused = channel.texts.filter { $0.contains("\"code\":\"rate_limited\"") }
        #expect(opened.count == SocketWatches.perSocket && refused.count == 45 - SocketWatches.perSocket, "\(channel.texts.count) messages")
        // Once one is closed, another opens.
        await watches.unwatch(socketID: 1, key: try #require(opened.first.flatMap { JSONMemberScanner.member("id", of: Data($0.utf8))?.stringValue }))
        await watches.open(socketID: 1, key: "late", body: ["search": .object(["lat": 52.09, "lon": 5.12, "radius": 2000])], outbox: outbox)
        #expect(channel.texts.last?.contains("\"type\":\"watch.opened\"") == true)
        await watches.socketClosed(1)
        geo.stop()
    }

    /// Auth, catalogue and geo in this process, and the edge's watches of geo.
    static func relay(renewAfter: TimeInterval) throws -> (Upstream, GeoService, SocketWatches) {
        let upstream = try Upstream()
        let geo = try GeoService(settings: try upstream.stack.settings(for: "geo"), logger: TestStack.logger("geo"))
        try upstream.stack.start(geo)
        let client = try AsyncServiceClient(.init(service: "geo", endpoint: upstream.stack.endpoint("geo"), timeout: 20))
        return (upstream, geo, SocketWatches(geo: client, renewAfter: renewAfter))
    }

    struct Timeout: Error, CustomStringConvertible {
        let description: String
    }

    private func eventually<T>(_ what: String, seconds: Double, _ probe: () throws -> T?) async throws -> T {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if let value = try probe() { return value }
            try await Task.sleep(for: .milliseconds(200))
        }
        throw Timeout(description: "no \(what) within \(Int(seconds)) s")
    }
}
