import Foundation
import Synchronization

/// What the edge has been doing, for the console's operators' page: requests per
/// second over the last minute, and the last problems it answered. In memory only;
/// Prometheus (`/metrics`) keeps the long view.
final class EdgeActivity: Sendable {
    /// A problem the edge answered: enough to find it in the logs (`requestId`), and
    /// the path without its query (which may hold an address or a token).
    struct ProblemRecord: Codable, Sendable, Equatable {
        var at: Date
        var method: String
        var path: String
        var status: Int
        var code: String
        var detail: String
        var requestId: String
    }

    /// Requests and errors in one second.
    private struct Second {
        var second: Int64 = -1
        var requests = 0
        var errors = 0
    }

    private struct State {
        var seconds = [Second](repeating: Second(), count: EdgeActivity.window)
        var total: Int64 = 0
        var problems: [ProblemRecord] = []
        var nextProblem = 0
    }

    /// Seconds the rates are counted over.
    static let window = 60
    /// Problems kept.
    static let keptProblems = 50

    let started: Date
    private let state = Mutex(State())

    init(started: Date = Date()) {
        self.started = started
    }

    /// A request answered with `status`.
    func requestAnswered(status: Int, at now: Date = Date()) {
        let second = Int64(now.timeIntervalSince1970.rounded(.down))
        state.withLock { state in
            let slot = Int(second % Int64(Self.window))
            if state.seconds[slot].second != second { state.seconds[slot] = Second(second: second) }
            state.seconds[slot].requests += 1
            if status >= 500 { state.seconds[slot].errors += 1 }
            state.total += 1
        }
    }

    /// A problem answered; the oldest of those kept makes room.
    func problemAnswered(_ record: ProblemRecord) {
        state.withLock { state in
            if state.problems.count < Self.keptProblems {
                state.problems.append(record)
            } else {
                state.problems[state.nextProblem] = record
            }
            state.nextProblem = (state.nextProblem + 1) % Self.keptProblems
        }
    }

    struct Report: Codable, Sendable, Equatable {
        /// Requests answered since the edge started.
        var requests: Int64
        /// Requests per second, averaged over the last 60 s and the last 10 s.
        var requestsPerSecond: Double
        var requestsPerSecond10s: Double
        /// Answers with a 5xx status per second over the last 60 s.
        var serverErrorsPerSecond: Double
        /// The last problems (4xx and 5xx), newest first.
        var problems: [ProblemRecord]
    }

    /// The counts as of `now`: the full seconds before it (the current one is still counting).
    func report(at now: Date = Date()) -> Report {
        let current = Int64(now.timeIntervalSince1970.rounded(.down))
        return state.withLock { state in
            func sum(last seconds: Int, _ value: (Second) -> Int) -> Double {
                let counted = state.seconds.filter { $0.second >= current - Int64(seconds) && $0.second < current }
                return Double(counted.map(value).reduce(0, +)) / Double(seconds)
            }
            let ordered = state.problems.count < Self.keptProblems
                ? state.problems : Array(state.problems[state.nextProblem...] + state.problems[..<state.nextProblem])
            return Report(requests: state.total, requestsPerSecond: sum(last: Self.window, \.requests),
                          requestsPerSecond10s: sum(last: 10, \.requests), serverErrorsPerSecond: sum(last: Self.window, \.errors),
                          problems: ordered.reversed())
        }
    }
}
