import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import ServiceClient
import StackClient
import Synchronization
import Wire

/// Every route of the edge and the op it is (EDGE.md). Each handler turns the HTTP
/// request into the op's body, calls the op for the request's caller, and turns the
/// reply back: the op's reply body as JSON, its error as a problem. The services'
/// rules and errors are theirs; the edge adds what HTTP has (statuses, `ETag`,
/// `Link`, bytes for images, GeoJSON).
struct EdgeRoutes: Sendable {
    let backends: Backends

    func register(into routes: EdgeRouter) {
        // Accounts and sessions.
        routes.on(.post, "/v1/auth/register") { try await forwardJSON(AuthAPI.register.name, $0, $1, status: .created) }
        routes.on(.post, "/v1/auth/login") { try await forwardJSON(AuthAPI.login.name, $0, $1) }
        routes.on(.post, "/v1/auth/anonymous") { try await forwardJSON(AuthAPI.anonymous.name, $0, $1, status: .created) }
        routes.on(.post, "/v1/auth/upgrade") { try await forwardJSON(AuthAPI.upgrade.name, $0, $1) }
        routes.on(.post, "/v1/auth/refresh") { try await forwardJSON(AuthAPI.refresh.name, $0, $1) }
        routes.on(.post, "/v1/auth/logout") { try await forwardJSON(AuthAPI.logout.name, $0, $1) }
        routes.on(.get, "/v1/me") { try await forward(AuthAPI.me.name, JSONObject(), $0, $1) }
        routes.on(.patch, "/v1/me") { try await forwardJSON(AuthAPI.profileUpdate.name, $0, $1) }
        routes.on(.delete, "/v1/me") { try await forwardJSON(AuthAPI.delete.name, $0, $1) }
        routes.on(.put, "/v1/me/avatar", putAvatar)
        routes.on(.delete, "/v1/me/avatar") { try await forward(AuthAPI.profileUpdate.name, ["removeAvatar": .bool(true)], $0, $1) }
        routes.on(.put, "/v1/me/location") { try await forwardJSON(AuthAPI.locationSet.name, $0, $1) }
        routes.on(.post, "/v1/me/password") { try await forwardJSON(AuthAPI.passwordChange.name, $0, $1) }
        routes.on(.get, "/v1/users", usersGet)
        routes.on(.get, "/v1/users/lookup") { request, context in
            try await forward(AuthAPI.usersLookup.name, try QueryParameter.body([.string("email")], from: request.uri), request, context)
        }
        routes.on(.get, "/v1/users/near") { request, context in
            try await forwardLocalized(GeoAPI.usersNear.name, try usersNearBody(request.uri), request, context)
        }
        routes.on(.get, "/v1/users/{id}", userGet)
        routes.on(.get, "/v1/users/{id}/avatar", avatarGet)
        routes.on(.get, "/.well-known/jwks.json", jwks)

        // Posts, images, ratings.
        routes.on(.post, "/v1/posts", createPost)
        routes.on(.post, "/v1/posts/import") { try await forwardJSON(CatalogueAPI.importPosts.name, $0, $1, limit: 4 * EdgeSettings.jsonBodyBytes) }
        routes.on(.get, "/v1/posts", listPosts)
        routes.pass(Self.getPost)
        routes.on(.patch, "/v1/posts/{id}", updatePost)
        routes.on(.delete, "/v1/posts/{id}") { request, context in
            try await forward(CatalogueAPI.delete.name, ["id": .string(try request.parameter("id", context))], request, context)
        }
        routes.on(.post, "/v1/posts/{id}/images", addImage)
        routes.on(.get, "/v1/images/{id}", getImage)
        routes.on(.delete, "/v1/images/{id}") { request, context in
            try await forward(CatalogueAPI.deleteImage.name, ["id": .string(try request.parameter("id", context))], request, context)
        }
        routes.on(.put, "/v1/posts/{id}/rating") { request, context in
            try await forwardJSON(CatalogueAPI.rate.name, request, context, adding: ["postId": .string(try request.parameter("id", context))])
        }

        // Trips.
        routes.on(.post, "/v1/trips") { try await forwardJSON(CatalogueAPI.createTrip.name, $0, $1, status: .created) }
        routes.on(.get, "/v1/trips") { try await forward(CatalogueAPI.listTrips.name, JSONObject(), $0, $1) }
        routes.on(.get, "/v1/trips/{id}") { request, context in
            try await forward(CatalogueAPI.getTrip.name, ["id": .string(try request.parameter("id", context))], request, context)
        }
        routes.on(.delete, "/v1/trips/{id}") { request, context in
            try await forward(CatalogueAPI.deleteTrip.name, ["id": .string(try request.parameter("id", context))], request, context)
        }
        routes.on(.post, "/v1/trips/{id}/members") { request, context in
            try await forwardJSON(CatalogueAPI.invite.name, request, context, adding: ["id": .string(try request.parameter("id", context))])
        }
        routes.on(.delete, "/v1/trips/{id}/members/me") { request, context in
            try await forward(CatalogueAPI.leaveTrip.name, ["id": .string(try request.parameter("id", context))], request, context)
        }
        routes.on(.get, "/v1/trips/{id}/calendar.ics", tripCalendar)

        // Search.
        routes.pass(Self.searchLike("/v1/search", GeoAPI.search.name, Self.searchParameters))
        routes.pass(Self.searchLike("/v1/nearest", GeoAPI.nearest.name, Self.nearestParameters))
        routes.pass(Self.searchLike("/v1/within", GeoAPI.within.name, Self.withinParameters))
        routes.on(.get, "/v1/places") { request, context in
            let body = try QueryParameter.body([.string("q"), .string("countryCode"), .integer("limit"), .string("lang")], from: request.uri)
            return try await forwardLocalized(GeoAPI.placesSearch.name, body, request, context)
        }
        routes.on(.get, "/v1/places/reverse") { request, context in
            let body = try QueryParameter.body([.number("lat"), .number("lon"), .string("lang")], from: request.uri)
            return try await forwardLocalized(GeoAPI.placesReverse.name, body, request, context)
        }
        routes.on(.get, "/v1/countries/{code}") { request, context in
            var body = try QueryParameter.body([.string("lang")], from: request.uri)
            body["code"] = .string(try request.parameter("code", context))
            return try await forwardLocalized(GeoAPI.countriesGet.name, body, request, context)
        }
        routes.on(.post, "/v1/fences/update") { try await forwardJSON(GeoAPI.fencesUpdate.name, $0, $1) }
        routes.on(.get, "/v1/fences/plan") { request, context in
            let body = try QueryParameter.body([.number("lat"), .number("lon"), .integer("max")], from: request.uri)
            return try await forward(GeoAPI.fencesPlan.name, body, request, context)
        }

        // Favourites.
        routes.on(.put, "/v1/favourites/{postId}") { request, context in
            try await forward(FavouritesAPI.add.name, ["postId": .string(try request.parameter("postId", context))], request, context)
        }
        routes.on(.delete, "/v1/favourites/{postId}") { request, context in
            try await forward(FavouritesAPI.remove.name, ["postId": .string(try request.parameter("postId", context))], request, context)
        }
        routes.on(.get, "/v1/favourites", listFavourites)
        routes.on(.get, "/v1/favourites/contains") { request, context in
            try await forward(FavouritesAPI.contains.name, try QueryParameter.body([.list("ids")], from: request.uri, renaming: ["ids": "postIds"]),
                              request, context)
        }

        // Chat.
        routes.on(.post, "/v1/messages") { try await forwardJSON(ChatAPI.send.name, $0, $1, status: .created) }
        routes.on(.get, "/v1/conversations") { request, context in
            try await paged(ChatAPI.conversations.name, try QueryParameter.body([.integer("limit"), .string("cursor")], from: request.uri),
                            request, context)
        }
        routes.on(.get, "/v1/conversations/{id}/messages") { request, context in
            var body = try QueryParameter.body([.integer("before"), .integer("after"), .integer("limit")], from: request.uri)
            body["conversationId"] = .string(try request.parameter("id", context))
            return try await forward(ChatAPI.messages.name, body, request, context)
        }
        routes.on(.post, "/v1/conversations/{id}/read") { request, context in
            try await forwardJSON(ChatAPI.read.name, request, context, adding: ["conversationId": .string(try request.parameter("id", context))])
        }
        routes.on(.put, "/v1/blocks/{userId}") { request, context in
            try await forward(ChatAPI.block.name, ["userId": .string(try request.parameter("userId", context))], request, context)
        }
        routes.on(.delete, "/v1/blocks/{userId}") { request, context in
            try await forward(ChatAPI.unblock.name, ["userId": .string(try request.parameter("userId", context))], request, context)
        }
    }

    static let searchParameters: [QueryParameter] = [
        .number("lat"), .number("lon"), .string("place"), .number("radius"), .string("q"), .list("kinds"), .list("tags"),
        .bool("openNow"), .string("at"), .string("sort"), .integer("limit"), .string("cursor"), .string("lang"),
        .bool("highlight"),
    ]
    static let nearestParameters: [QueryParameter] = [
        .number("lat"), .number("lon"), .integer("k"), .string("q"), .list("kinds"), .number("maxDistance"),
    ]
    static let withinParameters: [QueryParameter] = [
        .number("minLat"), .number("minLon"), .number("maxLat"), .number("maxLon"), .list("kinds"), .string("q"), .list("tags"),
        .bool("openNow"), .integer("limit"), .string("cursor"), .bool("highlight"),
    ]

    // MARK: Languages

    /// `body` with its `lang` (the names in the reply) set from the request's
    /// `Accept-Language` when the query gave none: the language it prefers most, as
    /// geo then falls back along the tag and to English.
    static func localized(_ body: JSONObject, _ request: Request) -> JSONObject {
        localized(body, request.headers)
    }

    static func localized(_ body: JSONObject, _ headers: HTTPFields) -> JSONObject {
        guard body["lang"] == nil, let header = headers[.acceptLanguage],
              let tag = LanguageTag.preferred(acceptLanguage: header) else { return body }
        var body = body
        body["lang"] = .string(tag.normalized)
        return body
    }

    /// For a reply whose names follow `Accept-Language`, so that caches keep one per language.
    static let variesByLanguage: HTTPFields = [.vary: "Accept-Language"]

    /// `forward` for an op whose reply names places or countries: in the request's
    /// language (`localized`), marked `Vary: Accept-Language`.
    func forwardLocalized(_ op: String, _ body: JSONObject, _ request: Request, _ context: EdgeContext) async throws -> Response {
        try await forward(op, Self.localized(body, request), request, context, headers: Self.variesByLanguage)
    }

    // MARK: Forwarding

    /// Calls `op` with `body` and answers its reply body: `204` for an op that
    /// answers `{}`, else `status`.
    func forward(_ op: String, _ body: JSONObject, _ request: Request, _ context: EdgeContext, attachments: [Data] = [],
                 status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) async throws -> Response {
        let reply = try await backends.call(op, body, for: request, context: context, attachments: attachments)
        return Self.json(try reply.body(), status: status, headers: headers)
    }

    /// Like `forward`, with the request's JSON body (and `adding` path parameters).
    func forwardJSON(_ op: String, _ request: Request, _ context: EdgeContext, status: HTTPResponse.Status = .ok,
                     adding parameters: JSONObject = JSONObject(), limit: Int = EdgeSettings.jsonBodyBytes) async throws -> Response {
        var request = request
        var body = try await request.jsonObject(limit: limit)
        for (key, value) in parameters { body[key] = value }
        return try await forward(op, body, request, context, status: status)
    }

    /// A page of a list: its body, and a `Link: <…>; rel="next"` while more follow.
    func paged(_ op: String, _ body: JSONObject, _ request: Request, _ context: EdgeContext,
               headers: HTTPFields = [:]) async throws -> Response {
        let reply = try await backends.call(op, body, for: request, context: context)
        return try Self.page(reply, request.uri, headers: headers).response
    }

    /// A page of a list as the answer, with its `Link` to the next.
    static func page(_ reply: AsyncServiceClient.RawReply, _ uri: URI, headers: HTTPFields = [:]) throws -> EdgeReply {
        let bytes = try reply.body()
        var headers = headers
        // Only the cursor is wanted of what may be a long list: not parsed as a whole.
        if case .string(let next)? = JSONMemberScanner.member("nextCursor", of: bytes) {
            headers[.link] = Self.nextLink(uri, cursor: next)
        }
        return EdgeReply.json(bytes, headers: headers)
    }

    static func json(_ bytes: Data, status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) -> Response {
        EdgeReply.json(bytes, status: status, headers: headers).response
    }

    /// The same path and query with `cursor` set to the next page's.
    static func nextLink(_ uri: URI, cursor: String) -> String {
        var items = FormQuery(uri).items.filter { $0.name != "cursor" }
        items.append(("cursor", cursor))
        let query = items.map { "\(percentEncoded($0.0))=\(percentEncoded($0.1))" }.joined(separator: "&")
        return "<\(uri.path)?\(query)>; rel=\"next\""
    }

    /// RFC 3986's unreserved characters, ASCII only (`CharacterSet.alphanumerics`
    /// would leave "ö" as it is, and a header must be ASCII).
    private static let unreserved = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    private static func percentEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text
    }
}

extension Request {
    /// A path parameter the route declares.
    func parameter(_ name: String, _ context: EdgeContext) throws -> String {
        guard let value = context.parameters.get(name) else { throw Problem.badRequest("the path has no \(name)") }
        return value
    }
}

/// The edge's router, the routes it passes on its event loops (`PassRoute`), and the
/// table of both (for `Allow` and the spec check).
struct EdgeRouter {
    let router: Hummingbird.Router<EdgeContext>
    let table: RouteTable
    let passed = PassList()

    func on(_ method: HTTPRequest.Method, _ path: String,
                     _ handler: @escaping @Sendable (Request, EdgeContext) async throws -> Response) {
        router.on(RouterPath(path), method: method, use: handler)
        table.add(method, path)
    }

    func pass(_ route: PassRoute) {
        passed.add(route)
        table.add(route.method, route.pattern)
    }
}

/// The passed routes as they are declared.
final class PassList: Sendable {
    private let added = Mutex<[PassRoute]>([])

    var routes: [PassRoute] { added.withLock { $0 } }

    func add(_ route: PassRoute) {
        added.withLock { $0.append(route) }
    }
}
