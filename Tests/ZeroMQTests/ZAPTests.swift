import Foundation
import TestThreads
import Testing
@testable import ZeroMQ

@Suite("CURVE with a ZAP allow-list", .ownThread)
struct ZAPAllowListTests {
    /// A ROUTER that answers "pong" to anything, as a CURVE server in the ZAP domain.
    private func server(_ context: Context, _ keys: CurveKeyPair) throws -> (Socket, String) {
        let router = try context.makeSocket(.router)
        try router.set(.linger(milliseconds: 0))
        try router.set(.curveServer(true))
        try router.set(.curveSecretKey(keys.secretKey))
        try router.set(.zapDomain(ZAPAuthenticator.domain))
        try router.set(.zapEnforceDomain(true))
        try router.set(.receiveTimeout(milliseconds: 100))
        try router.bind("tcp://127.0.0.1:*")
        return (router, router.lastEndpoint)
    }

    /// Sends one request; the reply, or nil when none came within the timeout.
    private func ask(_ context: Context, _ endpoint: String, client: CurveKeyPair?, serverKey: String, router: Socket) throws -> Data? {
        let request = try context.makeSocket(.request)
        defer { request.close() }
        try request.set(.linger(milliseconds: 0))
        try request.set(.receiveTimeout(milliseconds: 700))
        if let client {
            try request.set(.curveServerKey(serverKey))
            try request.set(.curvePublicKey(client.publicKey))
            try request.set(.curveSecretKey(client.secretKey))
        }
        try request.connect(endpoint)
        _ = try request.send(Data("ping".utf8))
        // Serve the router meanwhile: answer whatever reaches it.
        let deadline = Date().addingTimeInterval(0.7)
        while Date() < deadline {
            if let frames = try router.receiveMessage(), frames.count == 3 {
                _ = try router.send([frames[0], Data(), Data("pong".utf8)])
                break
            }
        }
        return try request.receiveMessage()?.last
    }

    @Test("a listed key gets through; a plaintext client and an unlisted key get nothing to the handler")
    func allowList() throws {
        let context = try Context()
        let serverKeys = try CurveKeyPair.generate(), listed = try CurveKeyPair.generate(), unlisted = try CurveKeyPair.generate()
        let zap = try ZAPAuthenticator(allowing: [listed.publicKey], context: context)
        defer { zap.stop() }
        let (router, endpoint) = try server(context, serverKeys)
        defer { router.close() }
        #expect(try ask(context, endpoint, client: listed, serverKey: serverKeys.publicKey, router: router) == Data("pong".utf8))
        #expect(try ask(context, endpoint, client: unlisted, serverKey: serverKeys.publicKey, router: router) == nil)
        #expect(try ask(context, endpoint, client: nil, serverKey: serverKeys.publicKey, router: router) == nil)
    }

    @Test("with no ZAP handler running, even a well-formed CURVE client is refused (the domain is enforced)")
    func noHandler() throws {
        let context = try Context()
        let serverKeys = try CurveKeyPair.generate(), client = try CurveKeyPair.generate()
        let (router, endpoint) = try server(context, serverKeys)
        defer { router.close() }
        #expect(try ask(context, endpoint, client: client, serverKey: serverKeys.publicKey, router: router) == nil)
    }

    @Test("the handler answers RFC 27 requests: 200 with the key as user id for a listed CURVE key, 400 otherwise")
    func replies() throws {
        let context = try Context()
        let listed = try CurveKeyPair.generate()
        let zap = try ZAPAuthenticator(allowing: [listed.publicKey], context: context)
        defer { zap.stop() }
        let key = try #require(Z85.decode(listed.publicKey))
        func request(_ mechanism: String, _ credentials: [Data], domain: String = ZAPAuthenticator.domain) -> [Data] {
            [Data("1.0".utf8), Data("7".utf8), Data(domain.utf8), Data("127.0.0.1".utf8), Data(), Data(mechanism.utf8)] + credentials
        }
        #expect(zap.reply(to: request("CURVE", [key]))[2] == Data("200".utf8))
        #expect(zap.reply(to: request("CURVE", [key]))[4] == Data(listed.publicKey.utf8))
        #expect(zap.reply(to: request("CURVE", [Data(repeating: 1, count: 32)]))[2] == Data("400".utf8))
        #expect(zap.reply(to: request("NULL", []))[2] == Data("400".utf8))
        #expect(zap.reply(to: request("CURVE", [key], domain: "other"))[2] == Data("400".utf8))
        #expect(zap.reply(to: [Data("2.0".utf8), Data("7".utf8)])[2] == Data("500".utf8))
    }
}
