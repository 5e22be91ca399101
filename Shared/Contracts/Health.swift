/// `<service>.health`, answered by every service.
public struct HealthReply: Codable, Sendable, Equatable {
    public var service: String
    public var version: String
    public var uptimeSeconds: Double
    public var status: String
    /// The process's memory, where the platform tells it.
    public var memory: MemoryUse?

    public init(service: String, version: String, uptimeSeconds: Double, status: String = "ok", memory: MemoryUse? = nil) {
        self.service = service
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.status = status
        self.memory = memory
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

/// What a service process holds in memory: for operators watching it grow, and the soak test.
public struct MemoryUse: Codable, Sendable, Equatable {
    /// Resident set size: pages of the process in RAM (its heap, code and mapped files).
    public var residentBytes: Int64
    /// SQLite's own heap, most of it the connections' page caches (up to 32 MiB each).
    public var sqliteBytes: Int64

    public init(residentBytes: Int64, sqliteBytes: Int64) {
        self.residentBytes = residentBytes
        self.sqliteBytes = sqliteBytes
    }
}
