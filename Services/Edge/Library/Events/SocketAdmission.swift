import HTTPTypes
import ServiceCore
import Wire

/// Whether a `GET /v1/events` upgrade may open a socket: while the edge holds fewer
/// than its total, and, when the upgrade names its user (`Authorization: Bearer`,
/// which apps can send and browsers cannot), while that user holds fewer than theirs.
/// A refused upgrade is answered with the problem this gives (429, or 401 for a
/// token that fails).
///
/// A socket that sends its token as its first message is counted against its user
/// then, and closed with 4429 past the limit (the upgrade had nothing to count by).
struct SocketAdmission: Sendable {
    let hub: EventHub
    let tokens: TokenCheck
    let maxSockets: Int
    let maxSocketsPerUser: Int

    enum Verdict: Sendable {
        /// Open it; signed in already when the upgrade carried a token.
        case admit(SocketSignIn?)
        case refuse(Problem)
    }

    static let edgeFull = Problem(ServiceError.rateLimited("the edge holds as many sockets as it may; try again later",
                                                           retryAfterMs: 5_000))

    func check(_ headers: HTTPFields) async -> Verdict {
        if hub.openCount.load(ordering: .relaxed) >= maxSockets { return .refuse(Self.edgeFull) }
        let token: String?
        do {
            token = try headers.bearerToken()
        } catch {
            return .refuse(Problem(error as? ServiceError ?? .unauthenticated("Authorization must be Bearer <access token>")))
        }
        guard let token else { return .admit(nil) }
        let caller: Caller
        do {
            caller = try await tokens.verify(token)
        } catch {
            return .refuse(Problem(error as? ServiceError ?? .unauthenticated("the token is not valid")))
        }
        if hub.socketCount(of: caller.userID) >= maxSocketsPerUser {
            return .refuse(Problem(ServiceError.rateLimited("this user has \(maxSocketsPerUser) sockets open, the most there may be",
                                                            retryAfterMs: 5_000)))
        }
        return .admit(SocketSignIn(caller: caller, token: token))
    }
}
