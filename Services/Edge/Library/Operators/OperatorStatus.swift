import Contracts
import Foundation
import Hummingbird
import ServiceClient
import Wire

/// `GET /v1/operator/status`: the state of the stack as the edge sees it, for the
/// console's operators' page. Only for a signed-in account whose email the edge's
/// settings name (`HEREABOUTS_EDGE_OPERATORS`): it shows paths and error texts of
/// other people's requests.
struct OperatorStatus: Codable, Sendable {
    /// One service, as its `health` and `ready` answer the edge.
    struct Service: Codable, Sendable {
        var service: String
        /// It answered `health` within a second.
        var answering: Bool
        var version: String?
        var uptimeSeconds: Double?
        /// The `health` call's round trip from the edge, in milliseconds.
        var roundTripMs: Double?
        var memory: MemoryUse?
        /// The storage its file is on: a full one refuses writes.
        var storage: StorageUse?
        /// Its `ready` answer: the file takes writes and it keeps up with its feeds.
        var ready: Bool?
        var feeds: [FeedReadiness]?
        /// The mail it sends (auth): waiting, given up, the last failure.
        var mail: MailQueueStatus?
        /// The pushes it sends (chat): waiting, delivered, given up, devices forgotten.
        var push: PushQueueStatus?
    }

    /// The edge itself.
    struct Edge: Codable, Sendable {
        var version: String
        var uptimeSeconds: Double
        var openSockets: Int
        var requests: Int64
        var requestsPerSecond: Double
        var requestsPerSecond10s: Double
        var serverErrorsPerSecond: Double
    }

    var checkedAt: Date
    var services: [Service]
    /// geo's index: posts, users, watches, and how far it is behind its feeds; nil
    /// when geo did not answer.
    var geo: GeoStats?
    var edge: Edge
    /// The last 50 problems the edge answered, newest first.
    var errors: [EdgeActivity.ProblemRecord]
}

struct OperatorRoutes: Sendable {
    let backends: Backends
    /// Clients with a one-second timeout and one try: a service that does not answer
    /// is reported as such, not waited for.
    let quick: Backends
    let activity: EdgeActivity
    let hub: EventHub
    let operators: Set<String>

    func register(into routes: EdgeRouter) {
        // Whether the caller is an operator: the console shows its operators' page to those.
        routes.on(.get, "/v1/operator") { request, context in
            let body = JSONObject([("operator", .bool(try await isOperator(request, context)))])
            return EdgeRoutes.json(JSONWriter.data(.object(body)), headers: [.cacheControl: "no-store"])
        }
        routes.on(.get, "/v1/operator/status") { request, context in
            guard try await isOperator(request, context) else {
                throw Problem(ServiceError.permissionDenied("this account is not one of the edge's operators (HEREABOUTS_EDGE_OPERATORS)"))
            }
            return EdgeRoutes.json(try OperatorStatus.encoder.encode(try await status()), headers: [.cacheControl: "no-store"])
        }
    }

    /// Whether the signed-in caller is one of the operators, by user id or address,
    /// with a confirmed address; 401 without a valid token (auth judges it, answering `auth.me`).
    private func isOperator(_ request: Request, _ context: EdgeContext) async throws -> Bool {
        guard try request.bearerToken() != nil else {
            throw Problem(ServiceError.unauthenticated("sign in: send Authorization: Bearer <access token>"))
        }
        let me = try await backends.call(AuthAPI.me.name, for: request, context: context).decoded(as: UserReply.self)
        guard me.user.emailVerified else { return false }
        return operators.contains(me.user.id) || me.user.email.map { operators.contains($0.lowercased()) } == true
    }

    private func status() async throws -> OperatorStatus {
        // A row per process: a service run as replicas has one per replica (geo, geo-1, …).
        let processes = ServiceEndpoints.services.flatMap { service in
            (0..<quick.client(service).replicas.count).map { (service, $0) }
        }
        async let services = withTaskGroup(of: (Int, OperatorStatus.Service).self) { group in
            for (order, (service, replica)) in processes.enumerated() {
                group.addTask { (order, await probe(service, replica: replica)) }
            }
            var all: [(Int, OperatorStatus.Service)] = []
            for await row in group { all.append(row) }
            return all.sorted { $0.0 < $1.0 }.map(\.1)
        }
        async let geo = try? quick.client(GeoAPI.service).call(GeoAPI.stats, Empty()).value
        let report = activity.report()
        let edge = OperatorStatus.Edge(
            version: HereaboutsVersion.current, uptimeSeconds: Date().timeIntervalSince(activity.started),
            openSockets: hub.openCount.load(ordering: .relaxed), requests: report.requests,
            requestsPerSecond: report.requestsPerSecond, requestsPerSecond10s: report.requestsPerSecond10s,
            serverErrorsPerSecond: report.serverErrorsPerSecond)
        return OperatorStatus(checkedAt: Date(), services: await services, geo: await geo, edge: edge, errors: report.problems)
    }

    /// One service's (one replica's) health (timed) and readiness.
    private func probe(_ service: String, replica: Int) async -> OperatorStatus.Service {
        let client = quick.client(service)
        let name = ServiceEndpoints.replicaName(service, replica)
        let started = ContinuousClock.now
        guard let health = try? await client.call(HealthAPI.health(service), Empty(), replica: replica).value else {
            return OperatorStatus.Service(service: name, answering: false)
        }
        let roundTrip = ContinuousClock.now - started
        let ready = try? await client.call(HealthAPI.ready(service), Empty(), replica: replica).value
        return OperatorStatus.Service(
            service: name, answering: true, version: health.version, uptimeSeconds: health.uptimeSeconds,
            roundTripMs: Double(roundTrip.components.attoseconds) / 1e15 + Double(roundTrip.components.seconds) * 1000,
            memory: health.memory, storage: health.storage, ready: ready?.ready, feeds: ready?.feeds, mail: health.mail,
            push: health.push)
    }
}

extension OperatorStatus {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }()
}
