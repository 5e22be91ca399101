import Contracts
import Foundation
@testable import Auth
@testable import Catalogue
@testable import Geo
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Wire

/// Auth, catalogue and geo running in this process, each on its own endpoint, with
/// geo following catalogue's feed.
final class GeoFixture {
    let stack: TestStack
    let auth: AuthService
    let catalogue: CatalogueService
    private(set) var geo: GeoService
    let authClient: ServiceClient
    let catalogueClient: ServiceClient
    let client: ServiceClient
    private var counter = 0

    init() throws {
        stack = try TestStack()
        var options = AuthService.Options(hashWorkers: 1)
        options.scrypt = ScryptParameters(logN: 10, r: 8, p: 1)
        auth = try AuthService(settings: try stack.settings(for: "auth"), options: options, logger: TestStack.logger("auth"))
        try stack.start(auth)
        var environment = stack.environment
        environment["HEREABOUTS_RATE_LIMIT"] = "0"
        catalogue = try CatalogueService(settings: try ServiceSettings(service: "catalogue", overrides: .init(workers: 2),
                                                                       environment: environment),
                                         logger: TestStack.logger("catalogue"))
        try stack.start(catalogue)
        geo = try GeoService(settings: try stack.settings(for: "geo"), logger: TestStack.logger("geo"))
        try stack.start(geo)
        authClient = stack.client("auth", timeout: 20)
        catalogueClient = stack.client("catalogue", timeout: 20)
        client = stack.client("geo", timeout: 20)
    }

    deinit { stack.stop() }

    /// Stops geo and starts it again on the same file.
    func restartGeo(removingFile: Bool = false) throws {
        geo.stop()
        if removingFile {
            for suffix in ["", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: geo.settings.databasePath + suffix)
            }
        }
        geo = try GeoService(settings: try stack.settings(for: "geo"), logger: TestStack.logger("geo"))
        try stack.start(geo)
    }

    /// A registered user's access token and id.
    func user() throws -> (token: String, id: String) {
        counter += 1
        let session = try authClient.call(AuthAPI.register, RegisterRequest(
            email: "user\(counter)@example.org", password: "correct horse battery"))
        return (session.accessToken, session.user.id)
    }

    func create(_ draft: PostDraft, token: String) throws -> Post {
        try catalogueClient.call(CatalogueAPI.create, CreatePostRequest(draft), token: token).post
    }

    /// Waits until geo has applied everything in catalogue's feed.
    func catchUp() throws {
        // Page to the end: the first page's lastSeq is not it when there are more than 1,000 changes.
        var after: Int64 = 0
        while true {
            let page = try catalogueClient.call(CatalogueAPI.changes, ChangesRequest(after: after, limit: 1000))
            if page.changes.isEmpty { break }
            after = page.lastSeq
        }
        for _ in 0..<500 {
            if try geo.postFollower.cursor() >= after { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw ServiceError(code: .unavailable, message: "geo did not catch up with catalogue")
    }

    /// Every post catalogue has, by id.
    func cataloguePosts() throws -> [String: Post] {
        var posts: [String: Post] = [:]
        var cursor: String?
        repeat {
            let page = try catalogueClient.call(CatalogueAPI.list, ListPostsRequest(limit: 100, cursor: cursor))
            for post in page.posts { posts[post.id] = post }
            cursor = page.nextCursor
        } while cursor != nil
        return posts
    }

    /// Every post geo has, by id (a box over the whole world, paged).
    func geoPosts() throws -> [String: Hit] {
        var hits: [String: Hit] = [:]
        var cursor: String?
        repeat {
            let page = try client.call(GeoAPI.within, WithinRequest(minLat: -90, minLon: -180, maxLat: 90, maxLon: 180,
                                                                     limit: 1000, cursor: cursor))
            for hit in page.hits { hits[hit.id] = hit }
            cursor = page.nextCursor
        } while cursor != nil
        return hits
    }

    /// Waits until geo has applied everything in auth's feed.
    func catchUpWithAuth() throws {
        let last = try authClient.call(AuthAPI.changes, ChangesRequest(after: 0, limit: 1000)).lastSeq
        for _ in 0..<500 {
            if try geo.userFollower.cursor() >= last { return }
            Thread.sleep(forTimeInterval: 0.02)
        }
        throw ServiceError(code: .unavailable, message: "geo did not catch up with auth")
    }

    func failure<Request, Response>(_ op: Op<Request, Response>, _ body: Request, token: String? = nil) -> ServiceError? {
        do {
            _ = try client.call(op, body, token: token)
            return nil
        } catch {
            return error as? ServiceError ?? ServiceError(code: .internal, message: "\(error)")
        }
    }
}

extension ServiceError {
    var summary: String { field.map { "\(code.rawValue) \($0)" } ?? code.rawValue }
}
