/// Where each service listens in the embedded stack, and the environment variables
/// that move it (names fixed by the design: scripts and Compose rely on them).
public enum ServiceEndpoints {
    public static let services = ["auth", "catalogue", "geo", "favourites", "chat"]

    private static let ports: [String: (requests: Int, events: Int?)] = [
        "auth": (7101, 7201),
        "catalogue": (7102, 7202),
        "geo": (7103, 7203),
        "favourites": (7104, nil),
        "chat": (7105, 7205),
    ]

    /// `HEREABOUTS_AUTH_ENDPOINT`, …
    public static func requestsVariable(_ service: String) -> String {
        "HEREABOUTS_\(service.uppercased())_ENDPOINT"
    }

    /// `HEREABOUTS_AUTH_EVENTS`, …
    public static func eventsVariable(_ service: String) -> String {
        "HEREABOUTS_\(service.uppercased())_EVENTS"
    }

    public static func defaultRequests(_ service: String) -> String {
        "tcp://127.0.0.1:\(ports[service]?.requests ?? 7100)"
    }

    /// Nil for a service without events (favourites).
    public static func defaultEvents(_ service: String) -> String? {
        ports[service]?.events.map { "tcp://127.0.0.1:\($0)" }
    }

    /// The endpoints of a list such as `HEREABOUTS_GEO_ENDPOINT` may hold: one, or
    /// several separated by commas (a service run as replicas).
    public static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// A replica's name, for its file, its log and status rows: `geo` for replica 0,
    /// `geo-2` for replica 2 (a StatefulSet's pod name, which `--replica` reads back).
    public static func replicaName(_ service: String, _ replica: Int) -> String {
        replica == 0 ? service : "\(service)-\(replica)"
    }

    /// The default endpoints of replica `index` on one machine (`here up --geo-replicas`):
    /// replica 0 has the service's usual ports, replica k > 0 ports 7300 + 10k + n and 7400 + 10k + n.
    public static func defaultReplica(_ service: String, index: Int) -> (requests: String, events: String?) {
        guard index > 0, let ports = ports[service] else { return (defaultRequests(service), defaultEvents(service)) }
        let offset = 10 * index + (ports.requests - 7100)
        return ("tcp://127.0.0.1:\(7300 + offset)", ports.events.map { _ in "tcp://127.0.0.1:\(7400 + offset)" })
    }

    /// The endpoints of `service` as configured in `environment`, else the defaults.
    /// For a service run as replicas each is a comma-separated list (`list`).
    public static func resolve(_ service: String, environment: [String: String]) -> (requests: String, events: String?) {
        let requests = environment[requestsVariable(service)].flatMap { $0.isEmpty ? nil : $0 } ?? defaultRequests(service)
        let events = environment[eventsVariable(service)].flatMap { $0.isEmpty ? nil : $0 } ?? defaultEvents(service)
        return (requests, events)
    }
}
