import Foundation
import Wire

/// The favourites service's ops: each user's saved post ids.
public enum FavouritesAPI {
    public static let service = "favourites"

    public static let add = Op<FavouriteRequest, FavouriteCountReply>("favourites.add", access: .user, effect: .write)
    public static let remove = Op<FavouriteRequest, FavouriteCountReply>("favourites.remove", access: .user, effect: .write)
    public static let list = Op<FavouritesListRequest, FavouritesListReply>("favourites.list", access: .user, effect: .read)
    public static let contains = Op<FavouritesContainsRequest, FavouritesContainsReply>(
        "favourites.contains", access: .user, effect: .read)
    public static let health = HealthAPI.health(service)
}

public struct FavouriteRequest: ValidatedBody, Equatable {
    public var postId: String
    public init(postId: String) { self.postId = postId }
    public func validate() throws { try Check.entityID(postId, field: "postId") }
}

public struct FavouriteCountReply: Codable, Sendable, Equatable {
    /// The caller's list size after the op.
    public var count: Int
    public init(count: Int) { self.count = count }
}

/// `favourites.list`: a page of the caller's list.
public typealias FavouritesListRequest = PageRequest

public struct FavouriteItem: Codable, Sendable, Equatable {
    public var postId: String
    public var addedAt: Date

    public init(postId: String, addedAt: Date) {
        self.postId = postId
        self.addedAt = addedAt
    }
}

public struct FavouritesListReply: Codable, Sendable, Equatable {
    /// Newest first (by when each was added).
    public var items: [FavouriteItem]
    /// The caller's whole list size.
    public var total: Int
    public var nextCursor: String?

    public init(items: [FavouriteItem], total: Int, nextCursor: String?) {
        self.items = items
        self.total = total
        self.nextCursor = nextCursor
    }
}

public struct FavouritesContainsRequest: ValidatedBody, Equatable {
    public var postIds: [String]
    public init(postIds: [String]) { self.postIds = postIds }
    public func validate() throws { try Check.entityIDs(postIds, field: "postIds", max: FavouriteRules.maxContains) }
}

public struct FavouritesContainsReply: Codable, Sendable, Equatable {
    /// Each asked id: whether it is in the caller's list.
    public var contains: [String: Bool]
    public init(contains: [String: Bool]) { self.contains = contains }
}
