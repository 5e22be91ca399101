import Contracts
import Foundation
import ServiceClient
import ServiceKit
import TestThreads
import Testing

@Suite("Replicas: settings and the choice of replica", .ownThread)
struct ReplicaSetTests {
    @Test("a replica binds its entry of the lists and keeps a file of its own; a pod's name gives its number")
    func settings() throws {
        let environment = ["HEREABOUTS_GEO_ENDPOINT": "tcp://127.0.0.1:9103, tcp://127.0.0.1:9113",
                           "HEREABOUTS_GEO_EVENTS": "tcp://127.0.0.1:9203,tcp://127.0.0.1:9213",
                           "HEREABOUTS_DATA_DIR": "/srv/hb"]
        let first = try ServiceSettings(service: "geo", environment: environment)
        #expect(first.replica == 0 && first.endpoint == "tcp://127.0.0.1:9103" && first.eventsEndpoint == "tcp://127.0.0.1:9203")
        #expect(first.databasePath == "/srv/hb/geo.sqlite")
        let second = try ServiceSettings(service: "geo", environment: environment.merging(["HEREABOUTS_REPLICA": "geo-1"]) { $1 })
        #expect(second.replica == 1 && second.endpoint == "tcp://127.0.0.1:9113" && second.eventsEndpoint == "tcp://127.0.0.1:9213")
        #expect(second.databasePath == "/srv/hb/geo-1.sqlite")
        // A replica the lists do not reach, unless its flags say where it binds.
        #expect(throws: (any Error).self) { try ServiceSettings(service: "geo", environment: environment.merging(["HEREABOUTS_REPLICA": "2"]) { $1 }) }
        let flagged = try ServiceSettings(service: "geo", overrides: .init(endpoint: "tcp://0.0.0.0:7103", events: "tcp://0.0.0.0:7203", replica: "geo-2"),
                                          environment: environment)
        #expect(flagged.replica == 2 && flagged.endpoint == "tcp://0.0.0.0:7103")
        for bad in ["two", "-1", "geo1x", "1234", "geo_2"] {
            #expect(throws: (any Error).self, "\(bad)") { try ServiceSettings(service: "geo", overrides: .init(replica: bad), environment: [:]) }
        }
    }

    @Test("requests go round the replicas, skip one that did not answer until it does, and skip one that is behind unless all are")
    func choice() throws {
        let replicas = ReplicaSet(list: "tcp://a:1,tcp://b:1,tcp://c:1", retryAfter: 60)
        #expect(replicas.count == 3)
        let round = (0..<6).map { _ in replicas.pick() }
        #expect(Set(round) == [0, 1, 2] && zip(round, round.dropFirst()).allSatisfy { ($0 + 1) % 3 == $1 })
        replicas.failed(1)
        #expect(!(0..<12).map { _ in replicas.pick() }.contains(1))
        #expect(replicas.pick(tried: [0, 2]) == 1, "when the others were tried, the one left out is tried too")
        replicas.answered(1)
        #expect((0..<6).map { _ in replicas.pick() }.contains(1))
        replicas.setBehind(2, true)
        #expect(!(0..<12).map { _ in replicas.pick() }.contains(2))
        #expect(!replicas.isTakingRequests(2) && replicas.isTakingRequests(0))
        replicas.setBehind(0, true)
        replicas.setBehind(1, true)
        #expect(Set((0..<6).map { _ in replicas.pick() }) == [0, 1, 2], "all behind: all are tried")
        // Ops that change geo's file go to replica 0 alone.
        #expect(ReplicaSet.required(for: GeoAPI.fencesUpdate.name) == 0)
        #expect(ReplicaSet.required(for: BackupAPI.backup("geo").name) == 0)
        #expect(ReplicaSet.required(for: GeoAPI.search.name) == nil)
    }
}
