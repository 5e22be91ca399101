import Contracts
import Foundation
import ServiceKit
import Wire

/// Favourites' handlers: each checks its request and asks the store.
struct FavouritesHandlers: Sendable {
    let store: FavouritesStore

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
        let before = try request.cursor.map(ListCursor.decode)
        let page = try store.list(of: userId, limit: request.limit ?? 20, before: before)
        return FavouritesListReply(items: page.items, total: page.total, nextCursor: page.nextBefore.map(ListCursor.encode))
    }

    func contains(_ request: FavouritesContainsRequest, _ context: RequestContext) throws -> FavouritesContainsReply {
        let userId = try context.requireCaller().userID
        let saved = try store.saved(request.postIds, by: userId)
        return FavouritesContainsReply(contains: Dictionary(request.postIds.map { ($0, saved.contains($0)) }) { first, _ in first })
    }
}

/// A list cursor: the seq of the last item shown, opaque to clients.
enum ListCursor {
    static func encode(_ seq: Int64) -> String { Base64URL.encode(Data("f\(seq)".utf8)) }

    static func decode(_ text: String) throws -> Int64 {
        guard let data = Base64URL.decode(text), let string = String(data: data, encoding: .utf8), string.first == "f",
              let seq = Int64(string.dropFirst()), seq > 0 else {
            throw ServiceError.invalidArgument(field: "cursor", "cursor is not one this service made")
        }
        return seq
    }
}
