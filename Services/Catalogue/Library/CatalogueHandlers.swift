import Contracts
import Foundation
import GRDB
import Imaging
import ServiceKit
import Wire

/// Catalogue's handlers: each checks what the op requires and leaves all SQL to the store.
struct CatalogueHandlers: Sendable {
    let store: CatalogueStore

    func register(into router: inout Router) {
        router.write(CatalogueAPI.create, rateLimited: true, create)
        router.write(CatalogueAPI.importPosts, rateLimited: true, importPosts)
        router.readRaw(CatalogueAPI.get, get)
        router.readRaw(CatalogueAPI.getMany, getMany)
        router.write(CatalogueAPI.update, rateLimited: true, update)
        router.write(CatalogueAPI.delete, rateLimited: true, delete)
        router.readRaw(CatalogueAPI.list, list)
        router.write(CatalogueAPI.addImage, rateLimited: true, addImage)
        router.readWithAttachments(CatalogueAPI.getImage, getImage)
        router.write(CatalogueAPI.deleteImage, rateLimited: true, deleteImage)
        router.write(CatalogueAPI.rate, rateLimited: true, rate)
        router.write(CatalogueAPI.createTrip, createTrip)
        router.read(CatalogueAPI.listTrips, listTrips)
        router.read(CatalogueAPI.getTrip, getTrip)
        router.write(CatalogueAPI.invite, invite)
        router.write(CatalogueAPI.acceptTrip, acceptTrip)
        router.write(CatalogueAPI.leaveTrip, leaveTrip)
        router.write(CatalogueAPI.deleteTrip, deleteTrip)
        router.changes(CatalogueAPI.changes, outbox: store.outbox, database: store.database)
    }

    // MARK: Posts

    func create(_ request: CreatePostRequest, _ context: RequestContext) throws -> Committed<PostReply> {
        let owner = try context.requireCaller().userID
        try ScheduleRules.check(request.draft)
        // Everything but the SQL happens before the transaction, which other writes wait for.
        let new = store.prepare(request.draft, owner: owner, now: Date())
        return try context.commit(as: PostReply.self, reply: Self.postReply(new.json)) { db in
            try store.insert(new, in: db)
        }
    }

    func importPosts(_ request: ImportPostsRequest, _ context: RequestContext) throws -> Committed<ImportReply> {
        let owner = try context.requireCaller().userID
        for (index, draft) in request.posts.enumerated() {
            try ScheduleRules.check(draft, prefix: "posts[\(index)].")
        }
        let now = Date()
        let prepared = request.posts.map { store.prepare($0, owner: owner, now: now) }
        return try context.commit { db in
            try store.importPosts(request.posts, prepared: prepared, owner: owner, now: now, in: db)
        }
    }

    func get(_ request: IDRequest, _ context: RequestContext) throws -> RawJSON {
        guard let json = try store.postJSON(id: request.id) else { throw ServiceError.notFound("no post has the id \(request.id)") }
        return Self.postReply(json)
    }

    func getMany(_ request: GetPostsRequest, _ context: RequestContext) throws -> RawJSON {
        Self.array("posts", try store.postsJSON(ids: request.ids))
    }

    func update(_ request: UpdatePostRequest, _ context: RequestContext) throws -> Committed<PostReply> {
        let caller = try context.requireCaller().userID
        let now = Date()
        return try context.commit(as: PostReply.self) { db in
            var post = try ownPost(request.id, caller: caller, in: db)
            if let expected = request.ifVersion, expected != post.version {
                throw ServiceError(code: .conflict, message: "the post is at version \(post.version), not \(expected): reload it and try again",
                                   field: "ifVersion")
            }
            let draft = try request.applied(to: post.draft).validated()
            try ScheduleRules.check(draft)
            // Nothing changed: no new version, nothing on the feed.
            guard draft != post.draft else { return Self.postReply(post.jsonBytes) }
            post.apply(draft, now: now)
            return Self.postReply(try store.savePost(post, in: db))
        }
    }

    func delete(_ request: IDRequest, _ context: RequestContext) throws -> Committed<Empty> {
        let caller = try context.requireCaller().userID
        return try context.commit { db in
            _ = try ownPost(request.id, caller: caller, in: db)
            try store.deletePost(id: request.id, in: db)
            return Empty()
        }
    }

    func list(_ request: ListPostsRequest, _ context: RequestContext) throws -> RawJSON {
        let filter = PostFilter(owner: request.owner, kind: request.kind, category: request.category, city: request.city,
                                countryCode: request.countryCode)
        let page = try store.listPosts(filter, before: try request.cursor.map(PostCursor.decode),
                                       limit: try Check.limit(request.limit))
        var writer = JSONWriter(capacity: 64 + page.posts.reduce(0) { $0 + $1.count + 1 })
        writer.appendASCII("{\"posts\":")
        writer.writeRawArray(page.posts)
        writer.appendASCII(",\"total\":")
        writer.write(Int64(page.total))
        if let next = page.nextSeq {
            writer.appendASCII(",\"nextCursor\":")
            writer.write(PostCursor.encode(next))
        }
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }

    // MARK: Images

    func addImage(_ request: AddImageRequest, _ context: RequestContext) throws -> Committed<ImageReply> {
        let caller = try context.requireCaller().userID
        guard let data = context.attachments.first else {
            throw ServiceError.invalidArgument(field: "image", "frame 1 must carry the image")
        }
        let (info, kept) = try ImageRules.accept(data, field: "image")
        let now = Date()
        return try context.commit { db in
            var post = try ownPost(request.postId, caller: caller, in: db)
            guard post.images.count < CatalogueRules.maxImages else {
                throw ServiceError.invalidArgument(field: "image", "a post holds at most \(CatalogueRules.maxImages) images")
            }
            let image = PostImage(id: Identifier.sortable(), contentType: info.contentType, width: info.width,
                                  height: info.height, bytes: info.bytes)
            try store.addImage(image, data: kept, to: &post, now: now, in: db)
            return ImageReply(image: image)
        }
    }

    func getImage(_ request: IDRequest, _ context: RequestContext) throws -> Reply<ImageReply> {
        guard let stored = try store.image(id: request.id, withData: true), let data = stored.data else {
            throw ServiceError.notFound("no image has the id \(request.id)")
        }
        return Reply(ImageReply(image: stored.image), attachments: [data])
    }

    func deleteImage(_ request: IDRequest, _ context: RequestContext) throws -> Committed<Empty> {
        let caller = try context.requireCaller().userID
        let now = Date()
        return try context.commit { db in
            guard let stored = try store.image(id: request.id, withData: false, in: db) else {
                throw ServiceError.notFound("no image has the id \(request.id)")
            }
            var post = try ownPost(stored.postID, caller: caller, in: db)
            try store.deleteImage(id: request.id, from: &post, now: now, in: db)
            return Empty()
        }
    }

    // MARK: Ratings

    func rate(_ request: SetRatingRequest, _ context: RequestContext) throws -> Committed<RatingReply> {
        let caller = try context.requireCaller().userID
        return try context.commit { db in
            RatingReply(rating: try store.setRating(postID: request.postId, user: caller, stars: request.stars, in: db))
        }
    }

    // MARK: Trips

    func createTrip(_ request: CreateTripRequest, _ context: RequestContext) throws -> Committed<TripReply> {
        let caller = try context.requireCaller().userID
        let now = Date()
        return try context.commit { db in
            let trip = try store.insertTrip(request, owner: caller, now: now, in: db)
            return TripReply(trip: try store.trip(id: trip.id, withMembers: true, caller: caller, in: db) ?? trip)
        }
    }

    func listTrips(_ request: Empty, _ context: RequestContext) throws -> TripsReply {
        TripsReply(trips: try store.trips(of: try context.requireCaller().userID))
    }

    func getTrip(_ request: IDRequest, _ context: RequestContext) throws -> TripReply {
        let caller = try context.requireCaller().userID
        guard let trip = try store.trip(id: request.id, withMembers: true, caller: caller) else {
            throw ServiceError.notFound("no trip has the id \(request.id)")
        }
        // The invited see what they are asked to join.
        guard trip.role != nil else { throw ServiceError.permissionDenied("only the trip's members see it") }
        return TripReply(trip: trip)
    }

    func invite(_ request: InviteRequest, _ context: RequestContext) throws -> Committed<TripReply> {
        let caller = try context.requireCaller().userID
        guard request.userId != caller else {
            throw ServiceError.invalidArgument(field: "userId", "you are on your own trip already")
        }
        guard try store.isKnownUser(request.userId) else {
            throw ServiceError.notFound("no user has the id \(request.userId)")
        }
        let now = Date()
        return try context.commit { db in
            try ownTrip(request.id, caller: caller, in: db)
            try store.invite(tripID: request.id, user: request.userId, now: now, in: db)
            guard let trip = try store.trip(id: request.id, withMembers: true, caller: caller, in: db) else { throw ServiceError.internal }
            return TripReply(trip: trip)
        }
    }

    /// Accepting twice, or as the owner or a member, answers the trip as it is.
    func acceptTrip(_ request: IDRequest, _ context: RequestContext) throws -> Committed<TripReply> {
        let caller = try context.requireCaller().userID
        let now = Date()
        return try context.commit { db in
            guard try store.trip(id: request.id, withMembers: false, in: db) != nil else {
                throw ServiceError.notFound("no trip has the id \(request.id)")
            }
            guard try store.memberRole(tripID: request.id, user: caller, in: db) != nil else {
                throw ServiceError.permissionDenied("you are not invited to this trip")
            }
            try store.accept(tripID: request.id, user: caller, now: now, in: db)
            guard let trip = try store.trip(id: request.id, withMembers: true, caller: caller, in: db) else { throw ServiceError.internal }
            return TripReply(trip: trip)
        }
    }

    func leaveTrip(_ request: IDRequest, _ context: RequestContext) throws -> Committed<Empty> {
        let caller = try context.requireCaller().userID
        return try context.commit { db in
            guard try store.trip(id: request.id, withMembers: false, in: db) != nil else {
                throw ServiceError.notFound("no trip has the id \(request.id)")
            }
            switch try store.memberRole(tripID: request.id, user: caller, in: db) {
            case .member?, .invited?:
                try store.removeMember(tripID: request.id, user: caller, in: db)
                return Empty()
            case .owner?:
                throw ServiceError.permissionDenied("the owner cannot leave a trip; delete it instead")
            case nil:
                throw ServiceError.permissionDenied("you are not on this trip")
            }
        }
    }

    func deleteTrip(_ request: IDRequest, _ context: RequestContext) throws -> Committed<Empty> {
        let caller = try context.requireCaller().userID
        return try context.commit { db in
            try ownTrip(request.id, caller: caller, in: db)
            try store.deleteTrip(id: request.id, in: db)
            return Empty()
        }
    }

    // MARK: Helpers

    /// The post, when it exists and `caller` owns it.
    private func ownPost(_ id: String, caller: String, in db: Database) throws -> Post {
        guard let post = try store.post(id: id, in: db) else { throw ServiceError.notFound("no post has the id \(id)") }
        guard post.ownerId == caller else { throw ServiceError.permissionDenied("only the post's owner may change it") }
        return post
    }

    private func ownTrip(_ id: String, caller: String, in db: Database) throws {
        guard let trip = try store.trip(id: id, withMembers: false, in: db) else {
            throw ServiceError.notFound("no trip has the id \(id)")
        }
        guard trip.ownerId == caller else { throw ServiceError.permissionDenied("only the trip's owner may do this") }
    }

    private static func postReply(_ json: [UInt8]) -> RawJSON {
        var writer = JSONWriter(capacity: json.count + 16)
        writer.appendASCII("{\"post\":")
        writer.writeRaw(json)
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }

    private static func array(_ key: String, _ items: [[UInt8]]) -> RawJSON {
        var writer = JSONWriter(capacity: 16 + items.reduce(0) { $0 + $1.count + 1 })
        writer.appendASCII("{")
        writer.write(key)
        writer.appendASCII(":")
        writer.writeRawArray(items)
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }
}

/// `nextCursor` of `catalogue.posts.list`: where the next page starts, opaque to clients.
enum PostCursor {
    static func encode(_ seq: Int64) -> String {
        Base64URL.encode(Data("p\(seq)".utf8))
    }

    static func decode(_ cursor: String) throws -> Int64 {
        guard let data = Base64URL.decode(cursor), let text = String(data: data, encoding: .utf8),
              text.hasPrefix("p"), let seq = Int64(text.dropFirst()), seq > 0 else {
            throw ServiceError.invalidArgument(field: "cursor", "cursor is not one this service gave out")
        }
        return seq
    }
}
