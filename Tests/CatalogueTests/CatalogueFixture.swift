import Contracts
import Foundation
@testable import Auth
@testable import Catalogue
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Wire

/// Auth and catalogue running in this process, each on its own endpoint, with
/// catalogue following auth's feed and verifying auth's tokens.
final class CatalogueFixture {
    let stack: TestStack
    let auth: AuthService
    let catalogue: CatalogueService
    let authClient: ServiceClient
    let client: ServiceClient
    private var counter = 0

    /// `environment` adds to catalogue's settings.
    init(rateLimit: String = "0", environment extra: [String: String] = [:]) throws {
        stack = try TestStack()
        var options = AuthService.Options(hashWorkers: 1)
        options.scrypt = ScryptParameters(logN: 10, r: 8, p: 1)
        auth = try AuthService(settings: try stack.settings(for: "auth"), options: options, logger: TestStack.logger("auth"))
        try stack.start(auth)
        var environment = stack.environment
        environment["HEREABOUTS_RATE_LIMIT"] = rateLimit
        environment.merge(extra) { $1 }
        catalogue = try CatalogueService(settings: try ServiceSettings(service: "catalogue", overrides: .init(workers: 2),
                                                                       environment: environment),
                                         logger: TestStack.logger("catalogue"))
        try stack.start(catalogue)
        authClient = stack.client("auth", timeout: 20)
        client = stack.client("catalogue", timeout: 20)
    }

    deinit { stack.stop() }

    /// A registered user's access token and id.
    func user(_ name: String? = nil) throws -> (token: String, id: String) {
        counter += 1
        let session = try authClient.call(AuthAPI.register, RegisterRequest(
            email: "\(name ?? "user\(counter)")-\(counter)@example.org", password: "correct horse battery"))
        return (session.accessToken, session.user.id)
    }

    func anonymous() throws -> (token: String, id: String) {
        let session = try authClient.call(AuthAPI.anonymous, Empty())
        return (session.accessToken, session.user.id)
    }

    /// Waits until catalogue has applied everything in auth's feed.
    func catchUpWithAuth() throws {
        let last = try authClient.call(AuthAPI.changes, ChangesRequest(after: 0, limit: 1000)).lastSeq
        for _ in 0..<200 {
            if try catalogue.follower.cursor() >= last { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw ServiceError(code: .unavailable, message: "catalogue did not catch up with auth")
    }

    func create(_ draft: PostDraft, token: String) throws -> Post {
        try client.call(CatalogueAPI.create, CreatePostRequest(draft), token: token).post
    }

    /// Calls an op and returns the error it fails with (nil when it succeeds).
    func failure<Request, Response>(_ op: Op<Request, Response>, _ body: Request, token: String? = nil,
                                    attachments: [Data] = [], id: String? = nil) -> ServiceError? {
        client.failure(op, body, token: token, attachments: attachments, id: id)
    }

    /// The whole feed from the start.
    func changes() throws -> [PostChange] {
        var all: [PostChange] = []
        var after: Int64 = 0
        while true {
            let page = try client.call(CatalogueAPI.changes, ChangesRequest(after: after, limit: 1000))
            guard !page.changes.isEmpty else { return all }
            all += page.changes
            after = page.lastSeq
        }
    }
}

extension PostDraft {
    /// A sight in Amsterdam, to vary from.
    static func sample(_ title: String = "Rijksmuseum", kind: String = "sight", ref: String? = nil) -> PostDraft {
        PostDraft(kind: kind, title: title, text: "Dutch masters.", lat: 52.36, lon: 4.885, ref: ref)
    }
}

