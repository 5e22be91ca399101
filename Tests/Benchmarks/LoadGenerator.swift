import Foundation
import ServiceClient
import Synchronization
import ServiceKit
import ZeroMQ

/// Closed-loop load: each client thread sends one prebuilt request, waits for its
/// reply, and sends the next, for a fixed time. The client does the same cheap
/// work for every peer, so rates of two peers in one run compare fairly.
struct LoadResult {
    var requests: Int
    var errors: Int
    var seconds: Double
    var latencies: [Double]

    var rate: Double { Double(requests) / seconds }

    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return .nan }
        let sorted = latencies.sorted()
        return sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)]
    }
}

enum LoadGenerator {
    /// Runs `clients` threads against `endpoint` for `seconds`, after a warm-up.
    /// `check` says whether a reply counts as a success.
    /// `request(client, n)` gives the frames of client's n-th request (vary the id for
    /// writes: a repeated id is answered from the service's log).
    static func run(endpoint: String, clients: Int, seconds: Double, warmup: Double = 1,
                    request: @escaping @Sendable (Int, Int) -> [Data], check: @escaping @Sendable (Data) -> Bool) -> LoadResult {
        run(endpoints: [endpoint], clients: clients, seconds: seconds, warmup: warmup, request: request, check: check)
    }

    /// Client i sends to `endpoints[i % count]`: a service's replicas shared evenly.
    static func run(endpoints: [String], clients: Int, seconds: Double, warmup: Double = 1,
                    request: @escaping @Sendable (Int, Int) -> [Data], check: @escaping @Sendable (Data) -> Bool) -> LoadResult {
        ClosedLoop.run(clients: clients, seconds: seconds, warmup: warmup) { index in
            guard let socket = try? Context.shared.makeSocket(.request) else { return nil }
            try? socket.set(.linger(milliseconds: 0))
            try? socket.set(.receiveTimeout(milliseconds: 30_000))
            try? socket.connect(endpoints[index % endpoints.count])
            return ClosedLoop.Client(close: { socket.close() }) { sequence in
                guard (try? socket.send(request(index, sequence))) == true, let reply = try? socket.receiveMessage() else {
                    throw PeerError("no reply")
                }
                return check(reply[0])
            }
        }
    }
}

/// Closed-loop load through any client: each thread makes its client, then sends
/// its n-th request and waits for the answer until the time is up. A client that
/// throws (its connection is gone) stops its thread.
enum ClosedLoop {
    struct Client {
        var close: () -> Void = {}
        /// Sends request n; whether the answer counts as a success.
        var send: (Int) throws -> Bool
    }

    static func run(clients: Int, seconds: Double, warmup: Double = 1,
                    makeClient: @escaping @Sendable (Int) -> Client?) -> LoadResult {
        let totals = Mutex<LoadResult>(LoadResult(requests: 0, errors: 0, seconds: seconds, latencies: []))
        let start = Date().addingTimeInterval(warmup)
        let end = start.addingTimeInterval(seconds)
        let threads = (0..<clients).map { index in
            ServiceThread(name: "load-\(index)") {
                guard let client = makeClient(index) else {
                    totals.withLock { $0.errors += 1 }
                    return
                }
                defer { client.close() }
                var count = 0, errors = 0, sequence = 0
                var latencies: [Double] = []
                latencies.reserveCapacity(100_000)
                while true {
                    let sent = Date()
                    if sent >= end { break }
                    guard let ok = try? client.send(sequence) else {
                        errors += 1
                        break
                    }
                    sequence += 1
                    if sent >= start {
                        if ok { count += 1 } else { errors += 1 }
                        latencies.append(Date().timeIntervalSince(sent) * 1000)
                    }
                }
                totals.withLock { totals in
                    totals.requests += count
                    totals.errors += errors
                    totals.latencies += latencies
                }
            }
        }
        threads.forEach { $0.join() }
        return totals.withLock { $0 }
    }
}

/// A ROUTER that answers every request at once with a fixed reply: the transport's
/// ceiling, without any service work.
enum EchoServer {
    static func run(endpoint: String, replyBytes: Int) throws {
        let socket = try Context.shared.makeSocket(.router)
        try socket.set(.linger(milliseconds: 0))
        try socket.set(.maxMessageSize(bytes: 8 * 1024 * 1024))
        try socket.bind(endpoint)
        let reply = Data(repeating: UInt8(ascii: "x"), count: replyBytes)
        while let frames = try socket.receiveMessage() {
            guard frames.count >= 2 else { continue }
            try socket.send([frames[0], Data(), reply], wait: false)
        }
    }
}
