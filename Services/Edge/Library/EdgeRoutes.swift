import Contracts
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import ServiceClient
import StackClient
import Wire

/// Every route of the edge and the op it is (EDGE.md). A route that is one call is
/// declared in one line (`EdgeRouter.route`: the op's body from the query its
/// request type reads, or the JSON body, and the path); the rest are handlers. Each
/// turns the HTTP request into the op's body, calls the op for the request's caller,
/// and turns the reply back: the op's reply body as JSON, its error as a problem. The services'
/// rules and errors are theirs; the edge adds what HTTP has (statuses, `ETag`,
/// `Link`, bytes for images, GeoJSON).
struct EdgeRoutes: Sendable {
    let backends: Backends

    func register(into routes: EdgeRouter) {
        // Accounts and sessions.
        routes.route(.post, "/v1/auth/register", AuthAPI.register, status: .created, bodyLanguage: true)
        routes.route(.post, "/v1/auth/login", AuthAPI.login)
        routes.route(.post, "/v1/auth/anonymous", AuthAPI.anonymous, status: .created)
        routes.route(.post, "/v1/auth/upgrade", AuthAPI.upgrade, bodyLanguage: true)
        // Account mail: confirming an address, a forgotten password, a new address.
        routes.route(.post, "/v1/auth/email/verify", AuthAPI.emailVerify)
        routes.route(.post, "/v1/auth/email/verify/resend", AuthAPI.emailVerifyResend, json: false, status: .accepted)
        routes.route(.post, "/v1/auth/password/forgot", AuthAPI.passwordForgot, status: .accepted)
        routes.route(.post, "/v1/auth/password/reset", AuthAPI.passwordReset)
        routes.route(.post, "/v1/me/email", AuthAPI.emailChange, status: .accepted)
        routes.route(.get, "/v1/dev/mail", AuthAPI.mailLatest)
        routes.route(.post, "/v1/auth/refresh", AuthAPI.refresh)
        routes.route(.post, "/v1/auth/logout", AuthAPI.logout)
        routes.route(.get, "/v1/me", AuthAPI.me)
        routes.route(.patch, "/v1/me", AuthAPI.profileUpdate)
        routes.route(.delete, "/v1/me", AuthAPI.delete, json: true)
        routes.on(.put, "/v1/me/avatar", putAvatar)
        // Not `route`: the update's other fields are no query parameters here.
        routes.on(.delete, "/v1/me/avatar") { try await forward(AuthAPI.profileUpdate.name, ["removeAvatar": .bool(true)], $0, $1) }
        routes.route(.put, "/v1/me/location", AuthAPI.locationSet)
        routes.route(.post, "/v1/me/password", AuthAPI.passwordChange)
        routes.on(.get, "/v1/users", usersGet)
        routes.route(.get, "/v1/users/lookup", AuthAPI.usersLookup)
        routes.on(.get, "/v1/users/near") { request, context in
            try await forwardLocalized(GeoAPI.usersNear.name, try usersNearBody(request.uri), request, context)
        }
        routes.on(.get, "/v1/users/{id}", userGet)
        routes.on(.get, "/v1/users/{id}/avatar", avatarGet)
        routes.on(.get, "/.well-known/jwks.json", jwks)

        // Posts, images, ratings.
        routes.on(.post, "/v1/posts", createPost)
        routes.route(.post, "/v1/posts/import", CatalogueAPI.importPosts, bodyLimit: 4 * EdgeSettings.jsonBodyBytes)
        routes.on(.get, "/v1/posts", listPosts)
        routes.add(Self.getPost)
        routes.on(.patch, "/v1/posts/{id}", updatePost)
        routes.route(.delete, "/v1/posts/{id}", CatalogueAPI.delete)
        routes.on(.post, "/v1/posts/{id}/images", addImage)
        routes.on(.get, "/v1/images/{id}", getImage)
        routes.route(.delete, "/v1/images/{id}", CatalogueAPI.deleteImage)
        routes.route(.put, "/v1/posts/{id}/rating", CatalogueAPI.rate, path: ["id": "postId"])

        // Trips.
        routes.route(.post, "/v1/trips", CatalogueAPI.createTrip, status: .created)
        routes.route(.get, "/v1/trips", CatalogueAPI.listTrips)
        routes.route(.get, "/v1/trips/{id}", CatalogueAPI.getTrip)
        routes.route(.delete, "/v1/trips/{id}", CatalogueAPI.deleteTrip)
        routes.route(.post, "/v1/trips/{id}/members", CatalogueAPI.invite)
        routes.route(.put, "/v1/trips/{id}/members/me", CatalogueAPI.acceptTrip)
        routes.route(.delete, "/v1/trips/{id}/members/me", CatalogueAPI.leaveTrip)
        routes.on(.get, "/v1/trips/{id}/calendar.ics", tripCalendar)

        // Search.
        routes.add(Self.searchLike("/v1/search", GeoAPI.search))
        routes.add(Self.searchLike("/v1/nearest", GeoAPI.nearest))
        routes.add(Self.searchLike("/v1/within", GeoAPI.within))
        routes.route(.get, "/v1/places", GeoAPI.placesSearch)
        routes.route(.get, "/v1/places/reverse", GeoAPI.placesReverse)
        routes.route(.get, "/v1/countries/{code}", GeoAPI.countriesGet)
        routes.route(.post, "/v1/fences/update", GeoAPI.fencesUpdate)
        routes.route(.get, "/v1/fences/plan", GeoAPI.fencesPlan)

        // Favourites.
        routes.route(.put, "/v1/favourites/{postId}", FavouritesAPI.add, json: false)
        routes.route(.delete, "/v1/favourites/{postId}", FavouritesAPI.remove)
        routes.on(.get, "/v1/favourites", listFavourites)
        routes.route(.get, "/v1/favourites/contains", FavouritesAPI.contains, query: ["ids": "postIds"])

        // Chat.
        routes.route(.post, "/v1/messages", ChatAPI.send, status: .created)
        routes.route(.get, "/v1/conversations", ChatAPI.conversations, paged: true)
        routes.route(.get, "/v1/conversations/{id}/messages", ChatAPI.messages, path: ["id": "conversationId"])
        routes.route(.post, "/v1/conversations/{id}/read", ChatAPI.read, path: ["id": "conversationId"])
        routes.route(.put, "/v1/blocks/{userId}", ChatAPI.block, json: false)
        routes.route(.delete, "/v1/blocks/{userId}", ChatAPI.unblock)
        routes.route(.put, "/v1/conversations/{id}/mute", ChatAPI.mute, path: ["id": "conversationId"])

        // Devices that get pushes.
        routes.route(.post, "/v1/devices", ChatAPI.devicesRegister, status: .created, bodyLanguage: true)
        routes.route(.get, "/v1/devices", ChatAPI.devices)
        routes.route(.delete, "/v1/devices/{id}", ChatAPI.devicesDelete, path: ["id": "deviceId"])
        routes.route(.get, "/v1/push/vapid-key", ChatAPI.vapidKey)
    }

    // MARK: Languages

    /// `body` with its `lang` (the names in the reply) set from the request's
    /// `Accept-Language` when the query gave none: the language it prefers most, as
    /// geo then falls back along the tag and to English.
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
        try await forward(op, Self.localized(body, request.headers), request, context, headers: Self.variesByLanguage)
    }

    // MARK: Forwarding

    /// Calls `op` with `body` and answers its reply body: `204` for an op that
    /// answers `{}`, else `status`.
    func forward(_ op: String, _ body: JSONObject, _ request: Request, _ context: EdgeContext, attachments: [Data] = [],
                 status: HTTPResponse.Status = .ok, headers: HTTPFields = [:]) async throws -> Response {
        let reply = try await backends.call(op, body, for: request, context: context, attachments: attachments)
        return Self.json(try reply.body(), status: status, headers: headers)
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
