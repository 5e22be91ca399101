import HTTPTypes
import Hummingbird
import Logging
import ServiceCore
import Synchronization

/// The edge's router, the routes it passes on its event loops (`PassRoute`), and the
/// table of both (for `Allow` and the spec check).
struct EdgeRouter {
    let router: Hummingbird.Router<EdgeContext>
    let table: RouteTable
    let backends: Backends
    let passed = PassList()

    func on(_ method: HTTPRequest.Method, _ path: String,
                     _ handler: @escaping @Sendable (Request, EdgeContext) async throws -> Response) {
        router.on(RouterPath(path), method: method, use: handler)
        table.add(method, path)
    }

    /// A route of one call: on the event loops when it reads no body, else
    /// Hummingbird's, which reads the body first.
    func add(_ route: PassRoute) {
        guard let limit = route.bodyLimit else {
            passed.add(route)
            table.add(route.method, route.pattern)
            return
        }
        on(route.method, route.pattern) { [backends] request, context in
            var request = request
            let names = route.parameterNames
            var passing = PassRequest(head: request.head, uri: request.uri, parameters: Dictionary(uniqueKeysWithValues: names.compactMap { name in
                context.parameters.get(name).map { (name, $0) }
            }))
            passing.json = try await request.jsonObject(limit: limit)
            let reply = try await backends.call(route.op, try route.body(passing), for: request, context: context)
            return try route.reply(passing, reply).response
        }
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

extension EdgeRouter {
    /// The edge's one router: its middleware, outermost first (it wraps only the routes
    /// added after it), and every route: the ops' (`EdgeRoutes`), the edge's own
    /// (health, the OpenAPI document), the operators' and the console's files; with
    /// the table of them all and the routes passed on the event loops, which run the
    /// same steps as the middleware (`PassedRoutes`).
    static func build(settings: EdgeSettings, backends: Backends, health: Backends, hub: EventHub, limiter: RateLimiter?,
                      logger: Logger) -> (router: Hummingbird.Router<EdgeContext>, table: RouteTable, passed: PassedRoutes) {
        let router = Hummingbird.Router(context: EdgeContext.self)
        let table = RouteTable()
        let activity = EdgeActivity()
        router.add(middleware: ClientMiddleware(trustedProxies: settings.trustedProxies))
        router.add(middleware: MetricsMiddleware())
        router.add(middleware: ActivityMiddleware(activity: activity))
        if !settings.corsOrigins.isEmpty {
            router.add(middleware: CORS(origins: Set(settings.corsOrigins)))
        }
        router.add(middleware: ProblemMiddleware(routes: table, activity: activity))
        if let limiter { router.add(middleware: RateLimitMiddleware(limiter: limiter)) }

        let edge = EdgeRouter(router: router, table: table, backends: backends)
        EdgeRoutes(backends: backends).register(into: edge)
        EdgeService.registerOwnRoutes(into: edge, health: health)
        OperatorRoutes(backends: backends, quick: health, activity: activity, hub: hub, operators: settings.operators).register(into: edge)
        ConsoleFiles(settings: settings).register(into: router)
        let passed = PassedRoutes(routes: edge.passed.routes,
                                  settings: .init(trustedProxies: settings.trustedProxies, corsOrigins: Set(settings.corsOrigins),
                                                  limiter: limiter, serverName: EdgeService.serverName),
                                  backends: backends, table: table, activity: activity, logger: logger)
        return (router, table, passed)
    }
}
