import Contracts
import EdgeFixtures
import Foundation
import ServiceClient
import Wire

/// How a soak client reaches the services: straight over ZeroMQ, or as a phone app
/// does, over HTTP through the edge. Both carry the same ops with the same bodies;
/// a reply is the op's reply body, a failure the protocol's error.
protocol SoakTransport {
    func call(_ service: String, _ op: String, _ body: JSONObject, token: String?, attachments: [Data]) -> Result<JSONObject, ServiceError>
    func close()
}

/// One `ServiceClient` per service.
final class ZeroMQSoakTransport: SoakTransport {
    private let clients: [String: ServiceClient]

    init(endpoints: [String: String]) {
        clients = endpoints.mapValues { ServiceClient(service: "soak", endpoint: $0, timeout: 30, tries: 1) }
    }

    func call(_ service: String, _ op: String, _ body: JSONObject, token: String?, attachments: [Data]) -> Result<JSONObject, ServiceError> {
        do {
            let (reply, _) = try clients[service]!.callRaw(op: op, body: .object(body), token: token, attachments: attachments)
            return reply.result
        } catch let error as ServiceError {
            return .failure(error)
        } catch {
            return .failure(ServiceError(code: .internal, message: "\(error)"))
        }
    }

    func close() { clients.values.forEach { $0.close() } }
}

/// The ops as HTTP requests to the edge (EDGE.md's routes), on one keep-alive
/// connection. A field named in the route's path goes into the path; the rest of
/// the body is the query of a GET or DELETE, else the JSON body; an attachment is
/// the body itself. Every POST carries an `Idempotency-Key`. A problem reply becomes
/// the error its `code` names; a `5xx` is counted apart, as the soak allows none.
final class HTTPSoakTransport: SoakTransport {
    struct Route {
        var method: String
        var path: String
        /// Body fields whose query parameter is named otherwise.
        var renamed: [String: String] = [:]
        init(_ method: String, _ path: String, renamed: [String: String] = [:]) {
            self.method = method
            self.path = path
            self.renamed = renamed
        }
    }

    static let routes: [String: Route] = [
        "auth.register": Route("POST", "/v1/auth/register"),
        "auth.refresh": Route("POST", "/v1/auth/refresh"),
        "auth.me": Route("GET", "/v1/me"),
        "auth.location.set": Route("PUT", "/v1/me/location"),
        "catalogue.posts.create": Route("POST", "/v1/posts"),
        "catalogue.posts.get": Route("GET", "/v1/posts/{id}"),
        "catalogue.posts.list": Route("GET", "/v1/posts"),
        "catalogue.posts.update": Route("PATCH", "/v1/posts/{id}"),
        "catalogue.posts.delete": Route("DELETE", "/v1/posts/{id}"),
        "catalogue.images.add": Route("POST", "/v1/posts/{postId}/images"),
        "catalogue.images.get": Route("GET", "/v1/images/{id}"),
        "catalogue.ratings.set": Route("PUT", "/v1/posts/{postId}/rating"),
        "catalogue.trips.create": Route("POST", "/v1/trips"),
        "catalogue.trips.get": Route("GET", "/v1/trips/{id}"),
        "catalogue.trips.invite": Route("POST", "/v1/trips/{id}/members"),
        "catalogue.trips.delete": Route("DELETE", "/v1/trips/{id}"),
        "geo.search": Route("GET", "/v1/search"),
        "geo.nearest": Route("GET", "/v1/nearest"),
        "geo.within": Route("GET", "/v1/within"),
        "geo.places.search": Route("GET", "/v1/places"),
        "geo.places.reverse": Route("GET", "/v1/places/reverse"),
        "geo.users.near": Route("GET", "/v1/users/near"),
        "geo.fences.update": Route("POST", "/v1/fences/update"),
        "favourites.add": Route("PUT", "/v1/favourites/{postId}"),
        "favourites.remove": Route("DELETE", "/v1/favourites/{postId}"),
        "favourites.list": Route("GET", "/v1/favourites"),
        "favourites.contains": Route("GET", "/v1/favourites/contains", renamed: ["postIds": "ids"]),
        "chat.send": Route("POST", "/v1/messages"),
        "chat.conversations": Route("GET", "/v1/conversations"),
        "chat.messages": Route("GET", "/v1/conversations/{conversationId}/messages"),
        "chat.read": Route("POST", "/v1/conversations/{conversationId}/read"),
    ]

    private let http: KeepAliveHTTP
    private let serverError: () -> Void

    /// `serverError` hears of every `5xx`.
    init(port: Int, serverError: @escaping () -> Void) {
        http = KeepAliveHTTP(port: port)
        self.serverError = serverError
    }

    func call(_ service: String, _ op: String, _ body: JSONObject, token: String?, attachments: [Data]) -> Result<JSONObject, ServiceError> {
        guard let route = Self.routes[op] else { return .failure(ServiceError(code: .internal, message: "no HTTP route for \(op)")) }
        var rest = body
        var path = ""
        for part in route.path.split(separator: "/", omittingEmptySubsequences: false) {
            if part.hasPrefix("{") {
                let field = String(part.dropFirst().dropLast())
                path += "/" + Self.escaped(rest[field]?.stringValue ?? "")
                rest[field] = nil
            } else if !part.isEmpty {
                path += "/" + part
            }
        }
        var payload: Data?, contentType: String?
        if let image = attachments.first {
            (payload, contentType) = (image, "image/png")
        } else if route.method == "GET" || route.method == "DELETE" {
            let query = rest.map { key, value in "\(route.renamed[key] ?? key)=\(Self.escaped(Self.queryText(value)))" }
            if !query.isEmpty { path += "?" + query.joined(separator: "&") }
        } else if !rest.isEmpty {
            (payload, contentType) = (JSONWriter.data(.object(rest)), "application/json")
        }
        let headers = route.method == "POST" ? [("Idempotency-Key", "soak-\(UUID().uuidString)")] : []
        let reply: HTTPReply
        do {
            reply = try http.send(route.method, path, token: token, headers: headers, body: payload, contentType: contentType)
        } catch {
            return .failure(ServiceError(code: .unavailable, message: "\(route.method) \(path): \(error)"))
        }
        if reply.status >= 500 { serverError() }
        guard (200..<300).contains(reply.status) else {
            let problem = try? reply.object()
            let code = problem?["code"]?.stringValue.map(ErrorCode.init(rawValue:)) ?? .internal
            return .failure(ServiceError(code: code, message: "\(reply.status) \(problem?["detail"]?.stringValue ?? reply.text)"))
        }
        // An image's bytes, or 204: no JSON to give.
        guard reply.header("Content-Type")?.hasPrefix("application/json") == true else { return .success(JSONObject()) }
        do {
            return .success(try reply.object())
        } catch {
            return .failure(ServiceError(code: .internal, message: "\(op): \(reply.status) with a body that is not a JSON object"))
        }
    }

    func close() {}

    private static func queryText(_ value: JSONValue) -> String {
        switch value {
        case .string(let text): text
        case .array(let items): items.map(queryText).joined(separator: ",")
        default: String(decoding: JSONWriter.data(value), as: UTF8.self)
        }
    }

    private static let unreserved: CharacterSet = {
        var set = CharacterSet.alphanumerics
        set.insert(charactersIn: "-._~,")
        return set
    }()

    private static func escaped(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? text }
}
