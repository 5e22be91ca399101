import Contracts
import Foundation
@testable import Auth
@testable import Catalogue
import ServiceClient
import ServiceKit
import ServiceKitTesting
import StackFixtures
import Wire

/// Auth and catalogue running in this process, each on its own endpoint, with
/// catalogue following auth's feed and verifying auth's tokens.
final class CatalogueFixture {
    /// Auth and catalogue in this process (`Upstream`, which the followers' tests use too).
    let upstream: Upstream
    private var counter = 0

    var stack: TestStack { upstream.stack }
    var auth: AuthService { upstream.auth }
    var catalogue: CatalogueService { upstream.catalogue }
    var authClient: ServiceClient { upstream.authClient }
    var client: ServiceClient { upstream.catalogueClient }

    /// `environment` adds to catalogue's settings.
    init(rateLimit: String = "0", environment extra: [String: String] = [:]) throws {
        upstream = try Upstream(rateLimit: rateLimit, environment: extra)
    }

    /// A registered user's access token and id.
    func user(_ name: String? = nil) throws -> (token: String, id: String) {
        counter += 1
        let session = try authClient.call(AuthAPI.register, RegisterRequest(
            email: "\(name ?? "user\(counter)")-\(counter)@example.org", password: "correct horse battery"))
        return (session.accessToken, session.user.id)
    }

    func anonymous() throws -> (token: String, id: String) { try upstream.anonymous() }

    /// Waits until catalogue has applied everything in auth's feed.
    func catchUpWithAuth() throws {
        let last = try authClient.call(AuthAPI.changes, ChangesRequest(after: 0, limit: 1000)).lastSeq
        for _ in 0..<200 {
            if try catalogue.follower.cursor() >= last { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw ServiceError(code: .unavailable, message: "catalogue did not catch up with auth")
    }

    func create(_ draft: PostDraft, token: String) throws -> Post { try upstream.create(draft, token: token) }

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

