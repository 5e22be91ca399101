import Contracts
import Foundation
import ServiceClient
import ServiceKitTesting
import TestThreads
import Testing
import Wire
import ZeroMQ

@Suite("Retries across a crash", .serialized, .ownThread)
struct RetryProcessTests {
    @Test("a create whose reply is lost to a kill -9 (before or after its commit), retried with the same id after the restart, is applied exactly once")
    func lostReplies() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-retry-\(Identifier.random(count: 8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = ["HEREABOUTS_DATA_DIR": directory.path, "HEREABOUTS_LOG_LEVEL": "error", "HEREABOUTS_RATE_LIMIT": "0"]
            .merging(ChildProcess.testSettings) { $1 }
        for service in ["auth", "catalogue"] {
            environment[ServiceEndpoints.requestsVariable(service)] = try ChildProcess.freeEndpoint()
            environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
        }
        let authEndpoint = environment[ServiceEndpoints.requestsVariable("auth")]!
        let catalogueEndpoint = environment[ServiceEndpoints.requestsVariable("catalogue")]!
        let auth = try ChildProcess("auth-service", arguments: [], environment: environment, log: directory.appendingPathComponent("auth.log"))
        defer { auth.terminate() }
        try #require(waitUntilHealthy(service: "auth", endpoint: authEndpoint))
        let token = try ServiceClient(service: "auth", endpoint: authEndpoint, timeout: 20, tries: 1)
            .call(AuthAPI.register, RegisterRequest(email: "retry@example.org", password: "password1")).accessToken

        var catalogue: ChildProcess?
        defer { catalogue?.terminate() }
        func startCatalogue() throws {
            catalogue = try ChildProcess("catalogue-service", arguments: [], environment: environment,
                                         log: directory.appendingPathComponent("catalogue.log"))
            try #require(waitUntilHealthy(service: "catalogue", endpoint: catalogueEndpoint))
        }
        try startCatalogue()
        let rounds = 8
        var committedBeforeKill = 0
        for round in 0..<rounds {
            let frame = RequestEnvelope.encode(id: "retry-\(round)", op: CatalogueAPI.create.name, token: token, body: .object(JSONObject([
                ("kind", .string("offer")), ("title", .string("Retry \(round)")), ("lat", .number(.double(1))), ("lon", .number(.double(1))),
            ])))
            // Send, then kill -9 a moment later (0–7 ms): sometimes before the commit, sometimes after it.
            let dealer = try Context.shared.makeSocket(.dealer)
            try dealer.set(.linger(milliseconds: 0))
            try dealer.connect(catalogueEndpoint)
            _ = try dealer.send([Data(), frame])
            usleep(UInt32(round) * 1_000)
            kill(catalogue!.process.processIdentifier, SIGKILL)
            catalogue!.process.waitUntilExit()
            dealer.close()
            try startCatalogue()
            // Did the lost request commit before the kill?
            let client = ServiceClient(service: "catalogue", endpoint: catalogueEndpoint, timeout: 20, tries: 1)
            defer { client.close() }
            let before = try client.call(CatalogueAPI.list, ListPostsRequest(limit: 100)).posts.first { $0.title == "Retry \(round)" }
            if before != nil { committedBeforeKill += 1 }
            // The retry: same id, same body.
            let (reply, _) = try client.callRaw(op: CatalogueAPI.create.name, body: .object(JSONObject([
                ("kind", .string("offer")), ("title", .string("Retry \(round)")), ("lat", .number(.double(1))), ("lon", .number(.double(1))),
            ])), token: token, id: "retry-\(round)")
            let body = try reply.result.get()
            let post = try JSONValueDecoder().decode(PostReply.self, from: JSONWriter.data(.object(body))).post
            // A committed request is answered from its kept reply: the same post, not a second one.
            if let before { #expect(post.id == before.id) }
        }
        let list = try ServiceClient(service: "catalogue", endpoint: catalogueEndpoint, timeout: 20, tries: 1)
            .call(CatalogueAPI.list, ListPostsRequest(limit: 100))
        #expect(list.total == rounds)
        #expect(Set(list.posts.map(\.title)) == Set((0..<rounds).map { "Retry \($0)" }))
        print("retry rounds: \(rounds), committed before the kill: \(committedBeforeKill), lost before the commit: \(rounds - committedBeforeKill)")
    }
}
