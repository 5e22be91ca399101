import Foundation
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
        let totals = Mutex<LoadResult>(LoadResult(requests: 0, errors: 0, seconds: seconds, latencies: []))
        let start = Date().addingTimeInterval(warmup)
        let end = start.addingTimeInterval(seconds)
        let threads = (0..<clients).map { index in
            ServiceThread(name: "load-\(index)") {
                guard let socket = try? Context.shared.makeSocket(.request) else { return }
                defer { socket.close() }
                try? socket.set(.linger(milliseconds: 0))
                try? socket.set(.receiveTimeout(milliseconds: 30_000))
                try? socket.connect(endpoint)
                var count = 0, errors = 0, sequence = 0
                var latencies: [Double] = []
                latencies.reserveCapacity(100_000)
                while true {
                    let frames = request(index, sequence)
                    sequence += 1
                    let sent = Date()
                    if sent >= end { break }
                    guard (try? socket.send(frames)) == true, let reply = try? socket.receiveMessage() else {
                        errors += 1
                        break
                    }
                    if sent >= start {
                        if check(reply[0]) { count += 1 } else { errors += 1 }
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
