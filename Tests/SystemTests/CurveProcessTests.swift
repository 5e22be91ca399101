import Contracts
import Foundation
import ServiceClient
import ServiceKitTesting
import TestThreads
import Testing
import Wire
import ZeroMQ

@Suite("CurveZMQ between processes", .serialized, .ownThread)
struct CurveProcessTests {
    @Test("here keys generate --owner gives the directory and every pair to a container's user, keeping pairs made before; a malformed owner is refused")
    func keysForContainers() throws {
        let directory = "/tmp/hb-keys-\(Identifier.random(count: 8))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        #expect(try here(["keys", "generate", directory], environment: [:]).status == 0)
        let before = try String(contentsOfFile: directory + "/auth.secret", encoding: .utf8)
        let given = try here(["keys", "generate", directory, "--owner", "10001:999"], environment: [:])
        #expect(given.status == 0, "\(given.err)")
        for name in ["", "/auth.secret", "/auth.key", "/edge.secret", "/here.key"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: directory + name)
            #expect(attributes[.ownerAccountID] as? Int == 10001 && attributes[.groupOwnerAccountID] as? Int == 999, "\(name)")
        }
        #expect(try FileManager.default.attributesOfItem(atPath: directory + "/auth.secret")[.posixPermissions] as? Int == 0o600)
        #expect(try String(contentsOfFile: directory + "/auth.secret", encoding: .utf8) == before, "pairs made before are kept")
        let refused = try here(["keys", "generate", directory, "--owner", "hereabouts"], environment: [:])
        #expect(refused.status != 0 && refused.err.contains("--owner takes UID or UID:GID"), "\(refused.err)")
    }

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
                           "HEREABOUTS_LOG_LEVEL": "warning", "HEREABOUTS_RATE_LIMIT": "0"].merging(ChildProcess.testSettings) { $1 }
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

    @Test("keys have roles: here's key reads no feed and hears a user's events only with that user's token; a service's key follows and hears all")
    func roles() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-roles-\(Identifier.random(count: 8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let keysDirectory = directory.appendingPathComponent("keys")
        try KeyRing.generate(into: keysDirectory)
        var environment = ["HEREABOUTS_DATA_DIR": directory.path, KeyRing.environmentVariable: keysDirectory.path,
                           "HEREABOUTS_LOG_LEVEL": "notice", "HEREABOUTS_RATE_LIMIT": "0"].merging(ChildProcess.testSettings) { $1 }
        for service in ["auth", "chat"] {
            environment[ServiceEndpoints.requestsVariable(service)] = try ChildProcess.freeEndpoint()
            environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
        }
        let auth = try ChildProcess("auth-service", arguments: [], environment: environment, log: directory.appendingPathComponent("auth.log"))
        defer { auth.terminate() }
        let chat = try ChildProcess("chat-service", arguments: [], environment: environment, log: directory.appendingPathComponent("chat.log"))
        defer { chat.terminate() }
        let here = try KeyRing.load(directory: keysDirectory, component: "here")
        let edge = try KeyRing.load(directory: keysDirectory, component: "edge")
        let endpoint = { (service: String) in environment[ServiceEndpoints.requestsVariable(service)]! }
        let events = environment[ServiceEndpoints.eventsVariable("chat")]!

        let hereAuth = ServiceClient(service: "auth", endpoint: endpoint("auth"), timeout: 20, tries: 1, curve: try here.client(of: "auth"))
        defer { hereAuth.close() }
        let edgeAuth = ServiceClient(service: "auth", endpoint: endpoint("auth"), timeout: 20, tries: 1, curve: try edge.client(of: "auth"))
        defer { edgeAuth.close() }
        var up = false
        for _ in 0..<100 where !up { up = (try? hereAuth.call(HealthAPI.health("auth"), Empty())) != nil }
        try #require(up, "\(auth.logText)")
        let ann = try hereAuth.call(AuthAPI.register, RegisterRequest(email: "ann@example.org", password: "password1"))
        let bob = try hereAuth.call(AuthAPI.register, RegisterRequest(email: "bob@example.org", password: "password1"))
        _ = try hereAuth.call(AuthAPI.locationSet, LocationSetRequest(lat: 51.5, lon: 3.6, discoverable: true), token: ann.accessToken)

        // The feed, with every discoverable home, is for services.
        #expect(hereAuth.failure(AuthAPI.changes, ChangesRequest())?.code == .permissionDenied)
        #expect(try edgeAuth.call(AuthAPI.changes, ChangesRequest()).changes.count == 2)
        // A copy of the file, on the service's disk, is for the operator alone: not the edge, nor any service.
        let refusedBackup = edgeAuth.failure(BackupAPI.backup("auth"), BackupRequest(name: "by-edge"))
        #expect(refusedBackup?.code == .permissionDenied, "\(String(describing: refusedBackup))")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("backups/by-edge").path))
        let copy = try hereAuth.call(BackupAPI.backup("auth"), BackupRequest(name: "by-here"))
        #expect(FileManager.default.fileExists(atPath: copy.file) && copy.bytes > 0)
        // Vouching for an address without its link is the operator's too.
        #expect(edgeAuth.failure(AuthAPI.emailConfirm, EmailRequest(email: "bob@example.org"))?.code == .permissionDenied)
        #expect(try hereAuth.call(AuthAPI.emailConfirm, EmailRequest(email: "bob@example.org")).emailVerified)
        #expect(try hereAuth.call(AuthAPI.me, Empty(), token: bob.accessToken).user.emailVerified)

        // Event subscriptions: bob's topic, asked for in every way.
        let bobTopic = ChatAPI.messageTopic(userId: bob.user.id)
        func subscriber(_ keys: KeyRing, _ topic: String, token: String?) throws -> EventSubscriber {
            let subscriber = try EventSubscriber(endpoint: events, curve: try keys.client(of: "chat"))
            try subscriber.subscribe(topic, token: token)
            return subscriber
        }
        let noToken = try subscriber(here, bobTopic, token: nil)
        let othersToken = try subscriber(here, bobTopic, token: ann.accessToken)
        let everyone = try subscriber(here, ChatAPI.messageTopicPrefix, token: bob.accessToken)
        let forged = try subscriber(here, bobTopic, token: bob.accessToken + "x")
        let own = try subscriber(here, bobTopic, token: bob.accessToken)
        let service = try subscriber(edge, ChatAPI.messageTopicPrefix, token: nil)
        defer { [noToken, othersToken, everyone, forged, own, service].forEach { $0.close() } }

        let hereChat = ServiceClient(service: "chat", endpoint: endpoint("chat"), timeout: 20, tries: 1, curve: try here.client(of: "chat"))
        defer { hereChat.close() }
        // Chat learns of bob from auth's feed (which it may read: its key is a service's); the
        // subscriptions settle meanwhile, each in its own time. Ann writes until one arrives
        // where it should and the service's subscription hears one too.
        var delivered: EventSubscriber.Event?
        var serviceHeard: EventSubscriber.Event?
        var sent = 0
        func send() {
            if (try? hereChat.call(ChatAPI.send, SendMessageRequest(to: bob.user.id, text: "hello \(sent)"), token: ann.accessToken)) != nil {
                sent += 1
            }
        }
        for _ in 0..<100 where delivered == nil || serviceHeard == nil {
            send()
            if delivered == nil { delivered = try own.next(timeout: 0.2) }
            if serviceHeard == nil { serviceHeard = try service.next(timeout: 0.2) }
        }
        try #require(delivered != nil && serviceHeard != nil, "\(chat.logText)")
        #expect(delivered?.topic == bobTopic)
        // With the service's subscription in place (what it heard so far may have begun between
        // one message's two topics), one more message goes out on both members' topics, and
        // the service hears both.
        while try service.next(timeout: 0.5) != nil {}
        let before = sent
        send()
        #expect(sent == before + 1)
        var heard: Set<String> = []
        while let event = try service.next(timeout: 1) { heard.insert(event.topic) }
        #expect(heard == [bobTopic, ChatAPI.messageTopic(userId: ann.user.id)])
        for refused in [noToken, othersToken, everyone, forged] {
            #expect(try refused.next(timeout: 0.5) == nil)
        }
        #expect(chat.logText.contains("refused a subscription"))
    }
}
