import Contracts
import HTTPTypes
import Wire

extension EdgeRouter {
    /// The route of one call to `op`, declared in one line: the op's body from the
    /// request's JSON body (`json`, by default for POST, PUT and PATCH) or else from
    /// its query, read as `Request`'s fields ask (`QueryShape`; `query` names a
    /// parameter that differs from its field, parameter: field); each path parameter
    /// as the field `path` names (by default its own name). The
    /// reply's body is passed on as it came (`204` for `{}`, else `status`), with a
    /// `Link` to the next page when `paged`. A request type with `lang` names places:
    /// from `Accept-Language` when the query gives none, marked `Vary`. With
    /// `bodyLanguage`, a JSON body's `lang` comes from `Accept-Language` when the body
    /// has none (an account's language, for its mail).
    func route<Request, Reply>(_ method: HTTPRequest.Method, _ pattern: String, _ op: Op<Request, Reply>, path: [String: String] = [:],
                               query renaming: [String: String] = [:], json: Bool? = nil, status: HTTPResponse.Status = .ok,
                               paged: Bool = false, bodyLimit: Int = EdgeSettings.jsonBodyBytes, bodyLanguage: Bool = false) {
        let readsBody = json ?? [.post, .put, .patch].contains(method)
        let names = PassRoute.parameterNames(in: pattern)
        let fromPath = Set(names.map { path[$0] ?? $0 })
        let queryName = Dictionary(uniqueKeysWithValues: renaming.map { ($1, $0) })
        let parameters = readsBody ? [] : QueryShape.parameters(of: Request.self).compactMap { parameter -> QueryParameter? in
            // A field the path gives is not the query's.
            guard !fromPath.contains(parameter.name) else { return nil }
            return parameter.named(queryName[parameter.name] ?? parameter.name)
        }
        let localized = parameters.contains { $0.name == "lang" }
        let headers = localized ? EdgeRoutes.variesByLanguage : [:]
        add(PassRoute(method: method, pattern: pattern, op: op.name, bodyLimit: readsBody ? bodyLimit : nil) { request in
            var body = readsBody ? request.json ?? JSONObject() : try QueryParameter.body(parameters, from: request.uri, renaming: renaming)
            for name in names { body[path[name] ?? name] = .string(try request.parameter(name)) }
            return localized || bodyLanguage ? EdgeRoutes.localized(body, request.headers) : body
        } reply: { request, reply in
            paged ? try EdgeRoutes.page(reply, request.uri, headers: headers) : EdgeReply.json(try reply.body(), status: status, headers: headers)
        })
    }
}
