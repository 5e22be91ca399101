import Contracts
import Foundation
import ServiceKit
import Wire

/// Favourites' handlers: each checks its request and asks the store.
struct FavouritesHandlers: Sendable {
    let store: FavouritesStore
    /// A list page's cursor: the seq of the last item shown.
    private static let cursor = SeqCursor(tag: "f")

    func register(into router: inout Router) {
        router.write(FavouritesAPI.add, rateLimited: true, add)
        router.write(FavouritesAPI.remove, rateLimited: true, remove)
        router.read(FavouritesAPI.list, list)
        router.read(FavouritesAPI.contains, contains)
    }

    func add(_ request: FavouriteRequest, _ context: RequestContext) throws -> Committed<FavouriteCountReply> {
        let userId = try context.requireCaller().userID
        let now = Date()
        return try context.commit { db in
            FavouriteCountReply(count: try store.add(request.postId, for: userId, at: now, in: db))
        }
    }

    func remove(_ request: FavouriteRequest, _ context: RequestContext) throws -> Committed<FavouriteCountReply> {
        let userId = try context.requireCaller().userID
        return try context.commit { db in
            FavouriteCountReply(count: try store.remove(request.postId, for: userId, in: db))
        }
    }

    func list(_ request: FavouritesListRequest, _ context: RequestContext) throws -> FavouritesListReply {
        let userId = try context.requireCaller().userID
        let before = try request.cursor.map(Self.cursor.decode)
        let page = try store.list(of: userId, limit: request.limit ?? 20, before: before)
        return FavouritesListReply(items: page.items, total: page.total, nextCursor: page.nextBefore.map(Self.cursor.encode))
    }

    func contains(_ request: FavouritesContainsRequest, _ context: RequestContext) throws -> FavouritesContainsReply {
        let userId = try context.requireCaller().userID
        let saved = try store.saved(request.postIds, by: userId)
        return FavouritesContainsReply(contains: Dictionary(request.postIds.map { ($0, saved.contains($0)) }) { first, _ in first })
    }
}
