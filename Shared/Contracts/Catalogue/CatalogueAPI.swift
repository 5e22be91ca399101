import Wire

/// The catalogue service's ops.
public enum CatalogueAPI {
    public static let service = "catalogue"

    public static let create = Op<CreatePostRequest, PostReply>("catalogue.posts.create", access: .registered, effect: .write)
    public static let importPosts = Op<ImportPostsRequest, ImportReply>(
        "catalogue.posts.import", access: .registered, effect: .write, maxFrame0Bytes: Limits.importFrame0Bytes)
    public static let get = Op<IDRequest, PostReply>("catalogue.posts.get", access: .anyone, effect: .read)
    public static let getMany = Op<GetPostsRequest, PostsReply>("catalogue.posts.getMany", access: .anyone, effect: .read)
    public static let update = Op<UpdatePostRequest, PostReply>("catalogue.posts.update", access: .registered, effect: .write)
    public static let delete = Op<IDRequest, Empty>("catalogue.posts.delete", access: .registered, effect: .write)
    public static let list = Op<ListPostsRequest, PostListReply>("catalogue.posts.list", access: .anyone, effect: .read)
    /// Frame 1 carries the image.
    public static let addImage = Op<AddImageRequest, ImageReply>(
        "catalogue.images.add", access: .registered, effect: .write, maxAttachments: 1)
    /// The reply's frame 1 carries the image.
    public static let getImage = Op<IDRequest, ImageReply>("catalogue.images.get", access: .anyone, effect: .read)
    public static let deleteImage = Op<IDRequest, Empty>("catalogue.images.delete", access: .registered, effect: .write)
    public static let rate = Op<SetRatingRequest, RatingReply>("catalogue.ratings.set", access: .registered, effect: .write)
    public static let createTrip = Op<CreateTripRequest, TripReply>("catalogue.trips.create", access: .registered, effect: .write)
    public static let listTrips = Op<Empty, TripsReply>("catalogue.trips.list", access: .user, effect: .read)
    public static let getTrip = Op<IDRequest, TripReply>("catalogue.trips.get", access: .user, effect: .read)
    public static let invite = Op<InviteRequest, TripReply>("catalogue.trips.invite", access: .registered, effect: .write)
    /// An invited buddy joins the trip.
    public static let acceptTrip = Op<IDRequest, TripReply>("catalogue.trips.accept", access: .user, effect: .write)
    /// A member leaves, or an invited buddy declines.
    public static let leaveTrip = Op<IDRequest, Empty>("catalogue.trips.leave", access: .user, effect: .write)
    public static let deleteTrip = Op<IDRequest, Empty>("catalogue.trips.delete", access: .registered, effect: .write)
    public static let changes = Op<ChangesRequest, ChangesReply<PostChange>>("catalogue.changes", access: .anyone, effect: .read)
    public static let health = HealthAPI.health(service)
}

public struct PostReply: Codable, Sendable, Equatable {
    public var post: Post
    public init(post: Post) { self.post = post }
}

public struct PostsReply: Codable, Sendable, Equatable {
    public var posts: [Post]
    public init(posts: [Post]) { self.posts = posts }
}

public struct PostListReply: Codable, Sendable, Equatable {
    public var posts: [Post]
    /// Matching posts on all pages.
    public var total: Int
    public var nextCursor: String?

    public init(posts: [Post], total: Int, nextCursor: String?) {
        self.posts = posts
        self.total = total
        self.nextCursor = nextCursor
    }
}

public struct ImportReply: Codable, Sendable, Equatable {
    public var created: Int
    public var updated: Int
    /// Posts whose fields were already as imported: not touched, no new version.
    public var unchanged: Int
    /// The post ids, in the order of the import.
    public var ids: [String]

    public init(created: Int, updated: Int, unchanged: Int, ids: [String]) {
        self.created = created
        self.updated = updated
        self.unchanged = unchanged
        self.ids = ids
    }
}

public struct ImageReply: Codable, Sendable, Equatable {
    public var image: PostImage
    public init(image: PostImage) { self.image = image }
}

public struct RatingReply: Codable, Sendable, Equatable {
    public var rating: Rating
    public init(rating: Rating) { self.rating = rating }
}

public struct TripReply: Codable, Sendable, Equatable {
    public var trip: Trip
    public init(trip: Trip) { self.trip = trip }
}

public struct TripsReply: Codable, Sendable, Equatable {
    public var trips: [Trip]
    public init(trips: [Trip]) { self.trips = trips }
}
