import Contracts
import Foundation
import Synchronization

/// The endpoints of a service that runs as several processes (geo's replicas), and
/// which of them the next request goes to.
///
/// Requests go round the replicas in turn. One that lets a try go unanswered is
/// left out until it answers again: a probe (`ReplicaProbe`) or, without one, a
/// single request after `retryAfter`. One whose probe says it is behind the feeds
/// it follows is left out until it catches up. When every replica is left out, all
/// are tried anyway: an answer from a lagging replica beats none.
///
/// Requests that change state go to the first endpoint alone (`owner`): a replica's
/// writes stay in its own file, and state such as who is inside which fence must
/// not split across files.
public final class ReplicaSet: Sendable {
    public let endpoints: [String]
    /// How long a replica that did not answer is left out when nothing probes it.
    public let retryAfter: TimeInterval

    /// The replica whose file holds the service's writes.
    public static let owner = 0

    /// The replica `op` must go to, when it must go to one: the owner for an op
    /// that changes a replicated service's file (`GeoAPI.ownerOps`).
    public static func required(for op: String) -> Int? {
        GeoAPI.ownerOps.contains(op) ? owner : nil
    }

    private struct Replica {
        /// When a try last went unanswered (uptime seconds); nil once it answers.
        var failedAt: Double?
        /// Its probe said it is behind its feeds.
        var behind = false
    }

    private struct State {
        var replicas: [Replica]
        var next = 0
    }

    private let state: Mutex<State>

    /// `list` as `HEREABOUTS_<SVC>_ENDPOINT` holds it: one endpoint, or several separated by commas.
    public convenience init(list: String, retryAfter: TimeInterval = 5) {
        let endpoints = ServiceEndpoints.list(list)
        self.init(endpoints: endpoints.isEmpty ? [list] : endpoints, retryAfter: retryAfter)
    }

    public init(endpoints: [String], retryAfter: TimeInterval = 5) {
        precondition(!endpoints.isEmpty, "a replica set needs an endpoint")
        self.endpoints = endpoints
        self.retryAfter = retryAfter
        // Clients made together (one per thread) start at different replicas.
        state = Mutex(State(replicas: Array(repeating: Replica(), count: endpoints.count),
                            next: Int.random(in: 0..<endpoints.count)))
    }

    public var count: Int { endpoints.count }

    /// The replica for a request's next try; those in `tried` are left out while
    /// another remains.
    public func pick(tried: Set<Int> = []) -> Int {
        guard endpoints.count > 1 else { return 0 }
        let now = ProcessInfo.processInfo.systemUptime
        return state.withLock { state in
            let untried = (0..<endpoints.count).filter { !tried.contains($0) }
            let candidates = untried.isEmpty ? Array(0..<endpoints.count) : untried
            func answering(_ index: Int) -> Bool {
                guard let failedAt = state.replicas[index].failedAt else { return true }
                return now - failedAt >= retryAfter
            }
            let preferred = candidates.filter { answering($0) && !state.replicas[$0].behind }
            let usable = !preferred.isEmpty ? preferred : candidates.filter(answering)
            let choices = usable.isEmpty ? candidates : usable
            // The first choice at or after `next`, going round.
            let chosen = choices.first { $0 >= state.next } ?? choices[0]
            state.next = (chosen + 1) % endpoints.count
            // Without a probe, a replica left out gets one request after `retryAfter`.
            if let failedAt = state.replicas[chosen].failedAt, now - failedAt >= retryAfter {
                state.replicas[chosen].failedAt = now
            }
            return chosen
        }
    }

    /// A try at `replica` went unanswered.
    public func failed(_ replica: Int) {
        let now = ProcessInfo.processInfo.systemUptime
        state.withLock { $0.replicas[replica].failedAt = now }
    }

    /// `replica` answered.
    public func answered(_ replica: Int) {
        state.withLock { $0.replicas[replica].failedAt = nil }
    }

    /// What `replica`'s probe said of its feeds.
    public func setBehind(_ replica: Int, _ behind: Bool) {
        state.withLock { $0.replicas[replica].behind = behind }
    }

    /// Whether `replica` takes requests now: it answers and keeps up.
    public func isTakingRequests(_ replica: Int) -> Bool {
        state.withLock { $0.replicas[replica].failedAt == nil && !$0.replicas[replica].behind }
    }
}
