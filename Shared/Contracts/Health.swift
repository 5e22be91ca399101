/// `<service>.health`, answered by every service.
public struct HealthReply: Codable, Sendable, Equatable {
    public var service: String
    public var version: String
    public var uptimeSeconds: Double
    public var status: String

    public init(service: String, version: String, uptimeSeconds: Double, status: String = "ok") {
        self.service = service
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.status = status
    }
}

public enum HealthAPI {
    public static func health(_ service: String) -> Op<Empty, HealthReply> {
        Op("\(service).health", access: .anyone, effect: .read)
    }
}

/// The version every service reports in `health`.
public enum HereaboutsVersion {
    public static let current = "0.1.0"
}
