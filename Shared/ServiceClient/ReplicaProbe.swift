import Contracts
import Foundation
import Synchronization
import Wire
import ZeroMQ

/// Asks each replica of a service `<service>.ready` every `interval`, on a thread of
/// its own, and tells the `ReplicaSet`: a replica that does not answer is left out
/// until it does; one that answers not ready (behind the feeds it follows by more
/// than `FeedReadiness.maxLag`, or not caught up lately) is sent nothing until it is.
final class ReplicaProbe: Sendable {
    private final class Running: Sendable {
        let flag = Atomic<Bool>(true)
        var isOn: Bool { flag.load(ordering: .relaxed) }
    }

    private let running = Running()
    private let thread: ServiceThread

    init(_ configuration: ServiceClient.Configuration, replicas: ReplicaSet, interval: TimeInterval) {
        let running = self.running
        let service = configuration.service
        thread = ServiceThread(name: "probe-\(service)") {
            let clients = replicas.endpoints.map { endpoint in
                var single = configuration
                single.endpoint = endpoint
                single.timeout = min(configuration.timeout, max(0.5, interval))
                single.tries = 1
                return ServiceClient(single)
            }
            defer { clients.forEach { $0.close() } }
            while running.isOn {
                let started = ProcessInfo.processInfo.systemUptime
                for (replica, client) in clients.enumerated() where running.isOn {
                    if let ready = try? client.call(HealthAPI.ready(service), Empty()) {
                        replicas.answered(replica)
                        replicas.setBehind(replica, !ready.ready)
                    } else {
                        replicas.failed(replica)
                    }
                }
                // Sleep the rest of the interval in short steps, to stop promptly.
                while running.isOn, ProcessInfo.processInfo.systemUptime - started < interval {
                    Thread.sleep(forTimeInterval: 0.05)
                }
            }
        }
    }

    /// Stops probing; returns when the thread has ended (a second call at once).
    func stop() {
        running.flag.store(false, ordering: .relaxed)
        thread.join()
    }
}
