import Contracts
import Foundation
@testable import Geo
import ServiceClient
import ServiceKit
import ServiceKitTesting
import StackFixtures
import Wire

/// Auth, catalogue and geo running in this process, each on its own endpoint, with
/// geo following catalogue's and auth's feeds.
final class GeoFixture {
    let upstream: Upstream
    private(set) var geo: GeoService
    let client: ServiceClient

    var stack: TestStack { upstream.stack }
    var authClient: ServiceClient { upstream.authClient }
    var catalogueClient: ServiceClient { upstream.catalogueClient }

    init() throws {
        upstream = try Upstream()
        geo = try GeoService(settings: try upstream.stack.settings(for: "geo"), logger: TestStack.logger("geo"))
        try upstream.stack.start(geo)
        client = upstream.stack.client("geo", timeout: 20)
    }

    /// Starts geo again on the same file, after it stopped.
    func startGeo() throws {
        geo = try GeoService(settings: try stack.settings(for: "geo"), logger: TestStack.logger("geo"))
        try stack.start(geo)
    }

    /// Stops geo and starts it again on the same file.
    func restartGeo(removingFile: Bool = false) throws {
        geo.stop()
        if removingFile {
            for suffix in ["", "-wal", "-shm"] {
                try? FileManager.default.removeItem(atPath: geo.settings.databasePath + suffix)
            }
        }
        try startGeo()
    }

    func user() throws -> (token: String, id: String) { try upstream.user() }

    func create(_ draft: PostDraft, token: String) throws -> Post { try upstream.create(draft, token: token) }

    /// Waits until geo has applied everything in catalogue's feed.
    func catchUp() throws {
        try upstream.wait(for: "geo", to: try upstream.catalogueLastSeq()) { try geo.postFollower.cursor() }
    }

    /// Waits until geo has applied everything in auth's feed.
    func catchUpWithAuth() throws {
        try upstream.wait(for: "geo", to: try upstream.authLastSeq()) { try geo.userFollower.cursor() }
    }

    func cataloguePosts() throws -> [String: Post] { try upstream.cataloguePosts() }

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

    func failure<Request, Response>(_ op: Op<Request, Response>, _ body: Request, token: String? = nil) -> ServiceError? {
        client.failure(op, body, token: token)
    }
}
