import Contracts
import Foundation
import ServiceClient
import ServiceKitTesting
import Testing
import Wire
import ZeroMQ

@Suite("CurveZMQ between processes", .serialized)
struct CurveProcessTests {
    @Test("with HEREABOUTS_KEYS_DIR, a service admits only listed keys: plaintext and unlisted clients get nothing; catalogue verifies tokens over CURVE")
    func allowList() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-curve-\(Identifier.random(count: 8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keysDirectory = directory.appendingPathComponent("keys")
        try KeyRing.generate(into: keysDirectory)
        let secretMode = try FileManager.default.attributesOfItem(atPath: keysDirectory.appendingPathComponent("auth.secret").path)[.posixPermissions]
        #expect(secretMode as? Int == 0o600)

        var environment = ["HEREABOUTS_DATA_DIR": directory.path, KeyRing.environmentVariable: keysDirectory.path,
                           "HEREABOUTS_LOG_LEVEL": "warning", "HEREABOUTS_RATE_LIMIT": "0"]
        for service in ["auth", "catalogue"] {
            environment[ServiceEndpoints.requestsVariable(service)] = try ChildProcess.freeEndpoint()
            environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
        }
        let auth = try ChildProcess("auth-service", arguments: [], environment: environment, log: directory.appendingPathComponent("auth.log"))
        defer { auth.terminate() }
        let catalogue = try ChildProcess("catalogue-service", arguments: [], environment: environment,
                                         log: directory.appendingPathComponent("catalogue.log"))
        defer { catalogue.terminate() }
        let here = try KeyRing.load(directory: keysDirectory, component: "here")
        let authEndpoint = environment[ServiceEndpoints.requestsVariable("auth")]!
        let catalogueEndpoint = environment[ServiceEndpoints.requestsVariable("catalogue")]!
        func health(_ service: String, _ endpoint: String, _ curve: CurveRole?) -> Bool {
            let client = ServiceClient(service: service, endpoint: endpoint, timeout: 1, tries: 1, curve: curve)
            defer { client.close() }
            return (try? client.call(HealthAPI.health(service), Empty())) != nil
        }
        // Started: the listed key is answered (waiting for the process to come up).
        var up = false
        for _ in 0..<60 where !up { up = health("auth", authEndpoint, try here.client(of: "auth")) }
        try #require(up, "\(auth.logText)")
        #expect(!health("auth", authEndpoint, nil))
        let stranger = try CurveKeyPair.generate()
        #expect(!health("auth", authEndpoint, .client(stranger, serverKey: here.publicKeys["auth"]!)))
        // A client that does not know the server's real key cannot talk to it either.
        #expect(!health("auth", authEndpoint, .client(here.own, serverKey: stranger.publicKey)))

        // Catalogue fetches auth's signing key over CURVE to verify a token, and follows auth's feed over it.
        var catalogueUp = false
        for _ in 0..<60 where !catalogueUp { catalogueUp = health("catalogue", catalogueEndpoint, try here.client(of: "catalogue")) }
        try #require(catalogueUp, "\(catalogue.logText)")
        let authClient = ServiceClient(service: "auth", endpoint: authEndpoint, timeout: 20, tries: 1, curve: try here.client(of: "auth"))
        defer { authClient.close() }
        let session = try authClient.call(AuthAPI.register, RegisterRequest(email: "curve@example.org", password: "password1"))
        let catalogueClient = ServiceClient(service: "catalogue", endpoint: catalogueEndpoint, timeout: 20, tries: 1,
                                            curve: try here.client(of: "catalogue"))
        defer { catalogueClient.close() }
        let post = try catalogueClient.call(CatalogueAPI.create, CreatePostRequest(PostDraft(kind: "offer", title: "Secure", lat: 1, lon: 1)),
                                            token: session.accessToken).post
        #expect(post.ownerId == session.user.id)
    }
}
