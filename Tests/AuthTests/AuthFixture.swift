import Contracts
import Foundation
@testable import Auth
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Wire

/// An auth service running in this process on its own endpoint and data directory,
/// with a client. Password hashing is made cheap (N = 2^10) so the suite runs
/// quickly; `standardCost: true` keeps the production cost.
final class AuthFixture {
    let stack: TestStack
    private(set) var service: AuthService
    let client: ServiceClient
    let settings: ServiceSettings
    let options: AuthService.Options

    /// Stops the service and starts another on the same file (a restart, or recovery after a crash).
    func restart() throws {
        stack.stop(service)
        service = try AuthService(settings: settings, options: options, logger: TestStack.logger("auth"))
        try stack.start(service)
    }

    /// - environment: variables besides the stack's (a relay in `HEREABOUTS_SMTP_URL`, say).
    init(standardCost: Bool = false, hashWorkers: Int = 1, hashQueueCapacity: Int = 64,
         environment: [String: String] = [:]) throws {
        stack = try TestStack()
        var options = AuthService.Options(hashWorkers: hashWorkers, hashQueueCapacity: hashQueueCapacity)
        if !standardCost { options.passwordCost = AuthService.Options.passwordCosts.lowerBound }
        // A relay that refused a message for now is tried again in a fraction of a second.
        options.mailRetryDelay = 0.2
        var settings = try stack.settings(for: "auth")
        settings.environment.merge(environment) { $1 }
        self.settings = settings
        self.options = options
        service = try AuthService(settings: settings, options: options, logger: TestStack.logger("auth"))
        try stack.start(service)
        client = stack.client("auth", timeout: 20)
    }

    deinit { stack.stop() }

    private var counter = 0

    /// Registers a user with a unique email; returns the session.
    @discardableResult
    func register(_ name: String? = nil, password: String = "correct horse battery", username: String? = nil,
                  displayName: String? = nil, phone: String? = nil, attributes: Attributes? = nil) throws -> SessionReply {
        counter += 1
        let email = "\(name ?? "user\(counter)")@example.org"
        return try client.call(AuthAPI.register, RegisterRequest(
            email: email, password: password, username: username, displayName: displayName, phone: phone,
            attributes: attributes))
    }

    /// Calls an op and returns the error it fails with (nil when it succeeds).
    func failure<Request, Response>(_ op: Op<Request, Response>, _ body: Request, token: String? = nil,
                                    attachments: [Data] = [], id: String? = nil, origin: String? = nil) -> ServiceError? {
        client.failure(op, body, token: token, attachments: attachments, id: id, origin: origin)
    }

    /// The whole `auth.changes` feed from the start.
    func changes() throws -> [UserChange] {
        try client.call(AuthAPI.changes, ChangesRequest(after: 0, limit: 1000)).changes
    }

    /// Sends a raw frame 0 (and more frames) and returns the reply envelope.
    func raw(_ frames: [Data], delimiter: Bool = true) throws -> ReplyEnvelope.Decoded? {
        try stack.exchangeRaw("auth", frames: frames, delimiter: delimiter).map { ReplyEnvelope.decode($0[0]) }
    }

    func raw(_ text: String) throws -> ReplyEnvelope.Decoded? {
        try raw([Data(text.utf8)])
    }

    /// The session id inside a session's access token.
    func sessionID(of session: SessionReply) throws -> String {
        let payload = session.accessToken.split(separator: ".")[1]
        guard let json = Base64URL.decode(String(payload)),
              let sid = try JSONParser.parse(json).objectValue?["sid"]?.stringValue else {
            throw ServiceError(code: .internal, message: "no sid in the access token")
        }
        return sid
    }

    /// A token signed with this service's own key but with chosen claims.
    func forgedToken(userID: String, sessionID: String, issuedAt: Date) throws -> String {
        let key = try service.store.signingKey()
        return try TokenIssuer(kid: key.kid, privateKey: key.privateKey)
            .accessToken(userID: userID, sessionID: sessionID, anonymous: false, now: issuedAt)
    }
}

