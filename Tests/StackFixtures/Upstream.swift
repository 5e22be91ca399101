import Auth
import Catalogue
import Contracts
import Foundation
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Wire

/// Auth and catalogue running in this process, each on its own endpoint: what the
/// services that follow them (geo, favourites, chat) need to be tested against.
public final class Upstream {
    public let stack: TestStack
    public let auth: AuthService
    public let catalogue: CatalogueService
    public let authClient: ServiceClient
    public let catalogueClient: ServiceClient
    private var counter = 0

    public static let password = "correct horse battery"

    /// `rateLimit` is catalogue's (`HEREABOUTS_RATE_LIMIT`, none by default); `environment`
    /// adds to catalogue's settings.
    public init(rateLimit: String = "0", environment extra: [String: String] = [:]) throws {
        stack = try TestStack()
        auth = try AuthService(settings: try stack.settings(for: "auth"), options: .cheapHashingForTests,
                               logger: TestStack.logger("auth"))
        try stack.start(auth)
        var environment = stack.environment
        environment["HEREABOUTS_RATE_LIMIT"] = rateLimit
        environment.merge(extra) { $1 }
        catalogue = try CatalogueService(settings: try ServiceSettings(service: "catalogue", overrides: .init(workers: 2),
                                                                       environment: environment),
                                         logger: TestStack.logger("catalogue"))
        try stack.start(catalogue)
        authClient = stack.client("auth", timeout: 20)
        catalogueClient = stack.client("catalogue", timeout: 20)
    }

    deinit { stack.stop() }

    /// A newly registered user's access token and id.
    public func user() throws -> (token: String, id: String) {
        counter += 1
        let session = try authClient.call(AuthAPI.register, RegisterRequest(
            email: "user\(counter)@example.org", password: Self.password))
        return (session.accessToken, session.user.id)
    }

    /// A new anonymous session's access token and id.
    public func anonymous() throws -> (token: String, id: String) {
        let session = try authClient.call(AuthAPI.anonymous, Empty())
        return (session.accessToken, session.user.id)
    }

    public func create(_ draft: PostDraft, token: String) throws -> Post {
        try catalogueClient.call(CatalogueAPI.create, CreatePostRequest(draft), token: token).post
    }

    /// The seq of catalogue's last change (paged to the end: a page holds ≤ 1,000).
    public func catalogueLastSeq() throws -> Int64 {
        var after: Int64 = 0
        while true {
            let page = try catalogueClient.call(CatalogueAPI.changes, ChangesRequest(after: after, limit: 1000))
            if page.changes.isEmpty { return after }
            after = page.lastSeq
        }
    }

    public func authLastSeq() throws -> Int64 {
        var after: Int64 = 0
        while true {
            let page = try authClient.call(AuthAPI.changes, ChangesRequest(after: after, limit: 1000))
            if page.changes.isEmpty { return after }
            after = page.lastSeq
        }
    }

    /// Waits (up to 10 s) until `cursor` reaches `seq`.
    public func wait(for name: String, to seq: Int64, cursor: () throws -> Int64) throws {
        for _ in 0..<500 {
            if try cursor() >= seq { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw ServiceError(code: .unavailable, message: "\(name) did not catch up")
    }

    /// Every post catalogue has, by id.
    public func cataloguePosts() throws -> [String: Post] {
        var posts: [String: Post] = [:]
        var cursor: String?
        repeat {
            let page = try catalogueClient.call(CatalogueAPI.list, ListPostsRequest(limit: 100, cursor: cursor))
            for post in page.posts { posts[post.id] = post }
            cursor = page.nextCursor
        } while cursor != nil
        return posts
    }
}
