import Contracts
import Foundation
import ServiceClient
import Wire
import ZeroMQ

/// What every `here` command talks through: one client per service at the
/// endpoints `HEREABOUTS_*` name (or the defaults), and the saved session, whose
/// access token is refreshed when it is about to expire.
public final class Gateway {
    public enum Token {
        /// Sent without one.
        case none
        /// The session's, when signed in.
        case ifSignedIn
        /// The session's; not signed in is the user's error.
        case required
    }

    public let environment: [String: String]
    public let sessionFile: SessionFile
    public private(set) var session: Session?
    /// `here`'s CURVE keys when the stack runs CURVE (see `keysDirectory`); nil for plaintext.
    public let keys: KeyRing?
    private var clients: [String: ServiceClient] = [:]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) throws {
        self.environment = environment
        sessionFile = SessionFile(environment: environment)
        session = sessionFile.load()
        keys = try Self.keysDirectory(environment).map { try KeyRing.load(directory: $0, component: "here") }
    }

    /// The stack's data directory: HEREABOUTS_DATA_DIR, else the per-user default.
    public static func dataDirectory(_ environment: [String: String]) -> URL {
        if let directory = environment["HEREABOUTS_DATA_DIR"], !directory.isEmpty { return URL(fileURLWithPath: directory) }
        if let xdg = environment["XDG_DATA_HOME"], !xdg.isEmpty { return URL(fileURLWithPath: xdg).appendingPathComponent("hereabouts") }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return URL(fileURLWithPath: home).appendingPathComponent(".local/share/hereabouts")
    }

    /// Where the CURVE keys are: HEREABOUTS_KEYS_DIR, else `<data dir>/keys` when
    /// `here up` made it there; nil (plaintext) otherwise.
    public static func keysDirectory(_ environment: [String: String]) -> URL? {
        if let directory = environment[KeyRing.environmentVariable] {
            return directory.isEmpty ? nil : URL(fileURLWithPath: directory)
        }
        let keys = dataDirectory(environment).appendingPathComponent("keys")
        return FileManager.default.fileExists(atPath: keys.appendingPathComponent("here.secret").path) ? keys : nil
    }

    /// How `here` connects to `service`'s sockets.
    public func curve(of service: String) throws -> CurveRole? {
        try keys?.client(of: service)
    }

    deinit {
        for client in clients.values { client.close() }
    }

    public func endpoint(of service: String) -> String {
        ServiceEndpoints.resolve(service, environment: environment).requests
    }

    public func client(_ service: String) -> ServiceClient {
        if let client = clients[service] { return client }
        // A person waits a while rather than see a spurious "unavailable" from a busy machine.
        let client = ServiceClient(service: service, endpoint: endpoint(of: service), timeout: 15, tries: 2,
                                   curve: try? self.curve(of: service))
        clients[service] = client
        return client
    }

    /// Calls `op` on the service its name starts with; `attachments` go as frames
    /// after frame 0 (an image, an avatar).
    public func call<Request, Response>(_ op: Op<Request, Response>, _ body: Request, token: Token = .ifSignedIn,
                                        attachments: [Data] = []) throws -> Response {
        let service = String(op.name.prefix { $0 != "." })
        return try client(service).call(op, body, token: try accessToken(token), attachments: attachments)
    }

    /// Like `call`, also giving the frames after the reply's frame 0 (an image's bytes).
    public func callWithAttachments<Request, Response>(_ op: Op<Request, Response>, _ body: Request,
                                                       token: Token = .ifSignedIn) throws -> (value: Response, attachments: [Data]) {
        let service = String(op.name.prefix { $0 != "." })
        return try client(service).callWithAttachments(op, body, token: try accessToken(token))
    }

    /// Sends any op with a JSON body: `here call`.
    public func callRaw(op: String, body: JSONValue, token: Token = .ifSignedIn) throws -> JSONObject {
        let service = String(op.prefix { $0 != "." })
        guard ServiceEndpoints.services.contains(service) else {
            throw GatewayError("no service \"\(service)\": ops start with one of \(ServiceEndpoints.services.joined(separator: ", "))")
        }
        return try client(service).callRaw(op: op, body: body, token: try accessToken(token)).reply.result.get()
    }

    private func accessToken(_ token: Token) throws -> String? {
        switch token {
        case .none: return nil
        case .ifSignedIn: return try currentSession()?.accessToken
        case .required: return try signedInSession().accessToken
        }
    }

    /// The signed-in session with an access token that lasts at least `lifetime`
    /// seconds more (refreshed when it would not); not signed in is the user's error.
    public func signedInSession(lasting lifetime: TimeInterval = 60) throws -> Session {
        guard let session = try currentSession(lasting: lifetime) else {
            throw GatewayError("not signed in: here register, here login or here anon first")
        }
        return session
    }

    /// The session, its access token refreshed when it has less than `lifetime` left.
    private func currentSession(lasting lifetime: TimeInterval = 60) throws -> Session? {
        guard let session, session.expiresAt.timeIntervalSinceNow < lifetime else { return session }
        do {
            let reply = try client(AuthAPI.service).call(AuthAPI.refresh, RefreshRequest(refreshToken: session.refreshToken))
            try signIn(reply)
        } catch let error as ServiceError where error.code == .unauthenticated {
            signOut()
            throw GatewayError("the session has ended (\(error.message)): sign in again")
        }
        return self.session
    }

    public func signIn(_ reply: SessionReply) throws {
        let session = Session(reply)
        try sessionFile.save(session)
        self.session = session
    }

    public func signOut() {
        sessionFile.remove()
        session = nil
    }
}
