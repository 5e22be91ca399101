import Contracts
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Imaging
import NIOCore
import ServiceClient
import StackClient
import Wire

/// The routes that do more than pass a body on: bytes, `ETag`s, joins, GeoJSON.
extension EdgeRoutes {
    // MARK: Users

    func usersGet(_ request: Request, _ context: EdgeContext) async throws -> Response {
        try await forward(AuthAPI.usersGet.name, try QueryParameter.body([.list("ids")], from: request.uri), request, context)
    }

    /// One public profile, `{"user":…}`; a missing user is 404.
    func userGet(_ request: Request, _ context: EdgeContext) async throws -> Response {
        let id = try request.parameter("id", context)
        let reply = try await backends.call(AuthAPI.usersGet.name, ["ids": .array([.string(id)])], for: request, context: context)
        guard let user = try reply.decoded(as: UsersReply.self).users.first else {
            throw Problem.notFound("no user has the id \(id)")
        }
        return Self.json(try JSONValueEncoder().encodeData(PublicUserReply(user: user)))
    }

    /// A new avatar: the body is the image, its `Content-Type` the image's type.
    func putAvatar(_ request: Request, _ context: EdgeContext) async throws -> Response {
        var request = request
        let image = try await Self.imageBody(&request, field: "avatar")
        return try await forward(AuthAPI.profileUpdate.name, JSONObject(), request, context, attachments: [image])
    }

    /// An avatar's bytes, with its type; revalidated by `ETag` (the bytes' digest),
    /// since a user may change it.
    func avatarGet(_ request: Request, _ context: EdgeContext) async throws -> Response {
        let reply = try await backends.call(AuthAPI.avatarGet.name, ["userId": .string(try request.parameter("id", context))],
                                            for: request, context: context)
        let type = try reply.decoded(as: AvatarReply.self).contentType
        let bytes = reply.attachments.first ?? Data()
        let tag = "\"" + SHA256.hash(data: bytes).prefix(12).map { String(format: "%02x", $0) }.joined() + "\""
        return Self.bytes(bytes, type: type, etag: tag, cacheControl: "public, max-age=300", request: request)
    }

    /// auth's signing keys as a JWK Set, for servers that verify Hereabouts tokens.
    func jwks(_ request: Request, _ context: EdgeContext) async throws -> Response {
        let reply = try await backends.call(AuthAPI.publicKey.name, for: request, context: context)
        let keys = try reply.decoded(as: PublicKeysReply.self).keys.map { key -> JSONValue in
            guard case .object(var object) = try JSONValueEncoder().encode(key) else { throw ServiceError.internal }
            object["use"] = .string("sig")
            return .object(object)
        }
        return Self.json(JSONWriter.data(.object(["keys": .array(keys)])), headers: [.cacheControl: "public, max-age=300"])
    }

    // MARK: Posts

    /// A new post, completed as `here post create` completes one: a time zone and a
    /// town from the nearest place where the author gave none. `201` with `Location`.
    func createPost(_ request: Request, _ context: EdgeContext) async throws -> Response {
        var request = request
        var body = try await request.jsonObject()
        if body["timezone"] == nil || body["place"] == nil, let draft = try? JSONValueDecoder().decode(PostDraft.self, from: .object(body)),
           let nearest = try? await backends.call(GeoAPI.placesReverse.name, ["lat": .number(.double(draft.lat)), "lon": .number(.double(draft.lon))],
                                                  for: request, context: context).decoded(as: PlaceReverseReply.self) {
            let completed = PostPlacement.complete(draft, nearest: nearest.place, distance: nearest.distance)
            if body["timezone"] == nil, let timezone = completed.timezone { body["timezone"] = .string(timezone) }
            if body["place"] == nil, let place = completed.place { body["place"] = try JSONValueEncoder().encode(place) }
        }
        let reply = try await backends.call(CatalogueAPI.create.name, body, for: request, context: context)
        let post = try reply.decoded(as: PostReply.self).post
        return Self.json(try reply.body(), status: .created,
                         headers: [.location: "/v1/posts/\(post.id)", .eTag: Self.etag(version: post.version)])
    }

    /// `?ids=a,b`: those posts; otherwise the filtered list, paged.
    func listPosts(_ request: Request, _ context: EdgeContext) async throws -> Response {
        if FormQuery(request.uri)["ids"] != nil {
            return try await forward(CatalogueAPI.getMany.name, try QueryParameter.body([.list("ids")], from: request.uri), request, context)
        }
        let body = try QueryParameter.body([.string("owner"), .string("kind"), .string("category"), .string("city"),
                                            .string("countryCode"), .integer("limit"), .string("cursor")], from: request.uri)
        return try await paged(CatalogueAPI.list.name, body, request, context)
    }

    /// A post with its version as `ETag`; `304` when `If-None-Match` has it.
    static let getPost = PassRoute(method: .get, pattern: "/v1/posts/{id}", op: CatalogueAPI.get.name) { request in
        ["id": .string(try request.parameter("id"))]
    } reply: { request, reply in
        // Only the version is wanted for the tag: the post is stepped through, not parsed.
        let body = try reply.body()
        guard case .number(.integer(let version))? = JSONMemberScanner.member(at: ["post", "version"], of: body),
              let number = Int(exactly: version) else {
            throw ServiceError(code: .internal, message: "\(CatalogueAPI.get.name) replied without a post's version")
        }
        let tag = etag(version: number)
        if matches(request.headers[.ifNoneMatch], tag) { return EdgeReply(status: .notModified, headers: [.eTag: tag]) }
        return EdgeReply.json(body, headers: [.eTag: tag])
    }

    /// A change to a post; `If-Match` with its `ETag` makes it conditional (a post
    /// changed meanwhile is `412`).
    func updatePost(_ request: Request, _ context: EdgeContext) async throws -> Response {
        var request = request
        var body = try await request.jsonObject()
        body["id"] = .string(try request.parameter("id", context))
        if let ifMatch = request.headers[.ifMatch], ifMatch.trimmingCharacters(in: .whitespaces) != "*" {
            guard let version = Self.version(inTag: ifMatch) else {
                throw Problem.badRequest("If-Match must be a post's ETag, such as \"3\"")
            }
            body["ifVersion"] = .number(.integer(version))
        }
        let reply = try await backends.call(CatalogueAPI.update.name, body, for: request, context: context)
        if case .failure(let error) = reply.envelope.result, error.code == .conflict, error.field == "ifVersion" {
            throw Problem(status: .preconditionFailed, code: .conflict, error.message, field: "If-Match")
        }
        let post = try reply.decoded(as: PostReply.self).post
        return Self.json(try reply.body(), headers: [.eTag: Self.etag(version: post.version)])
    }

    /// An image for a post: the body is the image. `201` with `Location`.
    func addImage(_ request: Request, _ context: EdgeContext) async throws -> Response {
        var request = request
        let image = try await Self.imageBody(&request, field: "image")
        let reply = try await backends.call(CatalogueAPI.addImage.name, ["postId": .string(try request.parameter("id", context))],
                                            for: request, context: context, attachments: [image])
        let id = try reply.decoded(as: ImageReply.self).image.id
        return Self.json(try reply.body(), status: .created, headers: [.location: "/v1/images/\(id)"])
    }

    /// An image's bytes. They never change, so they may be cached for good.
    func getImage(_ request: Request, _ context: EdgeContext) async throws -> Response {
        let id = try request.parameter("id", context)
        let reply = try await backends.call(CatalogueAPI.getImage.name, ["id": .string(id)], for: request, context: context)
        let image = try reply.decoded(as: ImageReply.self).image
        return Self.bytes(reply.attachments.first ?? Data(), type: image.contentType, etag: "\"\(image.id)\"",
                          cacheControl: "public, max-age=31536000, immutable", request: request)
    }

    // MARK: Trips

    /// A trip as an iCalendar all-day event.
    func tripCalendar(_ request: Request, _ context: EdgeContext) async throws -> Response {
        let reply = try await backends.call(CatalogueAPI.getTrip.name, ["id": .string(try request.parameter("id", context))],
                                            for: request, context: context)
        guard let event = ICalendarEvent(trip: try reply.decoded(as: TripReply.self).trip) else {
            throw Problem(status: .unprocessableContent, code: .invalidArgument, "this trip has no dates to put in a calendar", field: "start")
        }
        return Response(status: .ok, headers: [.contentType: "text/calendar; charset=utf-8"],
                        body: .init(byteBuffer: ByteBuffer(string: event.text)))
    }

    // MARK: Search

    /// `geo.search`, `geo.nearest` or `geo.within` from the query: JSON, or GeoJSON on
    /// `Accept: application/geo+json`; `Link` to the next page.
    static func searchLike<Request, Reply>(_ pattern: String, _ op: Op<Request, Reply>) -> PassRoute {
        let parameters = QueryShape.parameters(of: Request.self)
        // `center.place` of geo.search is named in the caller's language.
        let localized = parameters.contains { $0.name == "lang" }
        return PassRoute(method: .get, pattern: pattern, op: op.name) { request in
            let body = try QueryParameter.body(parameters, from: request.uri)
            return localized ? Self.localized(body, request.headers) : body
        } reply: { request, reply in
            var headers = localized ? Self.variesByLanguage : [:]
            guard GeoJSON.isAccepted(request.headers[.accept]) else { return try page(reply, request.uri, headers: headers) }
            let object: JSONObject
            switch reply.envelope.result {
            case .failure(let error): throw error
            case .success(let reply): object = reply
            }
            headers[.contentType] = GeoJSON.contentType
            if case .string(let next)? = object["nextCursor"] { headers[.link] = nextLink(request.uri, cursor: next) }
            return EdgeReply(status: .ok, headers: headers, body: ByteBuffer(bytes: GeoJSON.featureCollection(object)))
        }
    }

    func usersNearBody(_ uri: URI) throws -> JSONObject {
        var body = try QueryParameter.body([.number("lat"), .number("lon"), .string("place"), .number("radius"), .integer("limit")],
                                           from: uri)
        if let text = FormQuery(uri)["attributes"] {
            guard case .object(let attributes)? = try? JSONParser.parse(Data(text.utf8)) else {
                throw Problem.invalidArgument("attributes", "attributes must be a JSON object, such as {\"certification\":\"AOWD\"}")
            }
            body["attributes"] = .object(attributes)
        }
        return body
    }

    // MARK: Favourites

    /// The caller's favourites, paged; with `expand=posts` each with its post and
    /// provider, as `here fav list` shows them (`FavouritesJoin`).
    func listFavourites(_ request: Request, _ context: EdgeContext) async throws -> Response {
        let body = try QueryParameter.body([.integer("limit"), .string("cursor")], from: request.uri)
        guard FormQuery(request.uri)["expand"] == "posts" else {
            return try await paged(FavouritesAPI.list.name, body, request, context)
        }
        let page = try await backends.call(FavouritesAPI.list.name, body, for: request, context: context)
            .decoded(as: FavouritesListReply.self)
        let ids = FavouritesJoin.postIds(of: page)
        let posts = ids.isEmpty ? [] : try await backends.call(CatalogueAPI.getMany.name, GetPostsRequest(ids: ids), for: request,
                                                               context: context, as: PostsReply.self).posts
        let owners = FavouritesJoin.ownerIds(of: posts)
        let providers = owners.isEmpty ? [] : try await backends.call(AuthAPI.usersGet.name, UsersGetRequest(ids: owners), for: request,
                                                                      context: context, as: UsersReply.self).users
        let joined = FavouritesJoin.join(page, posts: posts, providers: providers)
        var headers: HTTPFields = [:]
        if let next = joined.nextCursor { headers[.link] = Self.nextLink(request.uri, cursor: next) }
        return Self.json(try JSONValueEncoder().encodeData(joined), headers: headers)
    }

    // MARK: Helpers

    /// An image body of at most 8 MiB whose `Content-Type` is JPEG, PNG or WebP and
    /// agrees with the bytes (which the service reads the type from).
    static func imageBody(_ request: inout Request, field: String) async throws -> Data {
        let declared = request.headers[.contentType]?.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard let declared, ["image/jpeg", "image/png", "image/webp"].contains(declared) else {
            throw Problem(status: .unsupportedMediaType, code: .badRequest,
                          "the body must be a JPEG, PNG or WebP image with that Content-Type, not \(declared ?? "none")")
        }
        let bytes = try await request.body(limit: EdgeSettings.imageBodyBytes)
        if let info = try? ImageProbe.inspect(bytes, maxBytes: .max, maxPixels: .max), info.contentType != declared {
            throw Problem.invalidArgument(field, "the body is \(info.contentType), not the \(declared) its Content-Type says")
        }
        return bytes
    }

    /// An image's or avatar's bytes, which a client uploaded: `nosniff`, so that a
    /// browser takes them for nothing but the image type they were checked to be.
    static func bytes(_ bytes: Data, type: String, etag: String, cacheControl: String, request: Request) -> Response {
        var headers: HTTPFields = [.eTag: etag, .cacheControl: cacheControl, .xContentTypeOptions: "nosniff"]
        if matches(request.headers[.ifNoneMatch], etag) { return Response(status: .notModified, headers: headers) }
        headers[.contentType] = type
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    static func etag(version: Int) -> String { "\"\(version)\"" }

    /// The version in a post's tag: `"3"`, or weak `W/"3"`.
    static func version(inTag tag: String) -> Int64? {
        var text = tag.trimmingCharacters(in: .whitespaces)
        if text.hasPrefix("W/") { text.removeFirst(2) }
        guard text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 3 else { return nil }
        return Int64(text.dropFirst().dropLast())
    }

    /// Whether `If-None-Match` names `etag` (or is `*`).
    static func matches(_ ifNoneMatch: String?, _ etag: String) -> Bool {
        guard let ifNoneMatch else { return false }
        return ifNoneMatch.split(separator: ",").contains { candidate in
            var text = candidate.trimmingCharacters(in: .whitespaces)
            if text == "*" { return true }
            if text.hasPrefix("W/") { text.removeFirst(2) }
            return text == etag
        }
    }
}
