import Foundation

/// A favourite: the post's id and when it was saved; with `expandingPosts`, the post
/// and its provider's shown contact too (nil when the post is gone).
public typealias Favourite = Operations.ListFavourites.Output.Ok.Body.JsonPayload.ItemsPayloadPayload

extension Hereabouts {
    /// Saves a post as the user's favourite (again: nothing changes); how many the user has.
    @discardableResult
    public func addFavourite(_ postId: String) async throws -> Int {
        try await send { try await $0.addFavourite(path: .init(postId: postId)).ok.body.json.count }
    }

    @discardableResult
    public func removeFavourite(_ postId: String) async throws -> Int {
        try await send { try await $0.removeFavourite(path: .init(postId: postId)).ok.body.json.count }
    }

    /// The user's favourites, newest first.
    public func favourites(expandingPosts: Bool = false, pageSize: Int? = nil) -> Pages<Favourite> {
        Pages { cursor in
            let reply = try await self.send {
                try await $0.listFavourites(query: .init(expand: expandingPosts ? .posts : nil, limit: pageSize, cursor: cursor)).ok.body.json
            }
            return Page(items: reply.items, nextCursor: reply.nextCursor)
        }
    }
}
