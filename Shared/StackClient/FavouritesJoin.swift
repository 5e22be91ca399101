import Contracts
import Foundation
import Wire

/// A saved post as an app lists it: when it was saved, the post, and how to reach its
/// provider as far as they show it. What `here fav list` prints and
/// `GET /v1/favourites?expand=posts` answers.
public struct FavouriteEntry: Codable, Sendable, Equatable {
    public var postId: String
    public var addedAt: Date
    /// Nil when catalogue no longer has the post (favourites follows deletions a
    /// moment later).
    public var post: Post?
    /// The provider's public profile (email and phone only where they show them).
    public var provider: PublicProfile?

    public init(postId: String, addedAt: Date, post: Post?, provider: PublicProfile?) {
        self.postId = postId
        self.addedAt = addedAt
        self.post = post
        self.provider = provider
    }

    enum CodingKeys: String, CodingKey { case postId, addedAt, post, provider }

    /// Every member is written, `null` where absent, as the protocol's objects are.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(postId, forKey: .postId)
        try container.encode(addedAt, forKey: .addedAt)
        try container.encode(post, forKey: .post)
        try container.encode(provider, forKey: .provider)
    }
}

/// A page of saved posts with their posts and providers.
public struct FavouriteEntriesPage: Codable, Sendable, Equatable {
    public var items: [FavouriteEntry]
    public var total: Int
    public var nextCursor: String?

    public init(items: [FavouriteEntry], total: Int, nextCursor: String?) {
        self.items = items
        self.total = total
        self.nextCursor = nextCursor
    }
}

/// Joins a page of `favourites.list` with its posts (`catalogue.posts.getMany`) and
/// their providers (`auth.users.get`): three services, one list for the app. Every
/// client that shows favourites does it this way: `here` and the edge.
public enum FavouritesJoin {
    /// The posts to fetch for a page.
    public static func postIds(of page: FavouritesListReply) -> [String] {
        page.items.map(\.postId)
    }

    /// The providers to fetch for the posts found, each once.
    public static func ownerIds(of posts: [Post]) -> [String] {
        var seen = Set<String>()
        return posts.map(\.ownerId).filter { seen.insert($0).inserted }
    }

    public static func join(_ page: FavouritesListReply, posts: [Post], providers: [PublicProfile]) -> FavouriteEntriesPage {
        let postsByID = Dictionary(posts.map { ($0.id, $0) }) { first, _ in first }
        let providersByID = Dictionary(providers.map { ($0.id, $0) }) { first, _ in first }
        let items = page.items.map { item in
            let post = postsByID[item.postId]
            return FavouriteEntry(postId: item.postId, addedAt: item.addedAt, post: post,
                                  provider: post.flatMap { providersByID[$0.ownerId] })
        }
        return FavouriteEntriesPage(items: items, total: page.total, nextCursor: page.nextCursor)
    }
}
