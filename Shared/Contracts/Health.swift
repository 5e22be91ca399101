/// `<service>.health`, answered by every service.
public struct HealthReply: Codable, Sendable, Equatable {
    public var service: String
    public var version: String
    public var uptimeSeconds: Double
    public var status: String
    /// The process's memory, where the platform tells it.
    public var memory: MemoryUse?
    /// The storage its file is on; nil for a service without a file.
    public var storage: StorageUse?
    /// The mail the service sends (auth's account mail); nil for a service that sends none.
    public var mail: MailQueueStatus?
    /// The pushes the service sends (chat's); nil for a service that sends none.
    public var push: PushQueueStatus?

    public init(service: String, version: String, uptimeSeconds: Double, status: String = "ok", memory: MemoryUse? = nil,
                storage: StorageUse? = nil, mail: MailQueueStatus? = nil, push: PushQueueStatus? = nil) {
        self.service = service
        self.version = version
        self.uptimeSeconds = uptimeSeconds
        self.status = status
        self.memory = memory
        self.storage = storage
        self.mail = mail
        self.push = push
    }
}

public enum HealthAPI {
    /// Liveness: the process answers, from memory, at once.
    public static func health(_ service: String) -> Op<Empty, HealthReply> {
        Op("\(service).health", access: .anyone, effect: .read)
    }

    /// Readiness: the service can do its work now (its file takes writes, it keeps up
    /// with the feeds it follows).
    public static func ready(_ service: String) -> Op<Empty, ReadyReply> {
        Op("\(service).ready", access: .anyone, effect: .read)
    }
}

/// `<service>.ready`.
public struct ReadyReply: Codable, Sendable, Equatable {
    public var service: String
    /// True when the database is writable and every feed is followed.
    public var ready: Bool
    /// Nil for a service without a file of its own.
    public var database: DatabaseReadiness?
    /// One per feed the service follows, in name order.
    public var feeds: [FeedReadiness]

    public init(service: String, ready: Bool, database: DatabaseReadiness?, feeds: [FeedReadiness]) {
        self.service = service
        self.ready = ready
        self.database = database
        self.feeds = feeds
    }
}

public struct DatabaseReadiness: Codable, Sendable, Equatable {
    /// A write transaction committed just now.
    public var writable: Bool
    /// Why not, when it is not.
    public var problem: String?

    public init(writable: Bool, problem: String? = nil) {
        self.writable = writable
        self.problem = problem
    }
}

public struct FeedReadiness: Codable, Sendable, Equatable {
    /// The source service: `auth`, `catalogue`.
    public var feed: String
    /// Changes the source announced that are not applied yet.
    public var lag: Int64
    /// Since the follower last read the feed to its end; nil when it never has.
    public var secondsSinceCaughtUp: Double?
    /// Caught up within the last `FeedReadiness.maxSilence` seconds and no more than
    /// `FeedReadiness.maxLag` behind.
    public var ready: Bool

    public static let maxSilence: Double = 10
    public static let maxLag: Int64 = 1_000

    public init(feed: String, lag: Int64, secondsSinceCaughtUp: Double?) {
        self.feed = feed
        self.lag = lag
        self.secondsSinceCaughtUp = secondsSinceCaughtUp
        ready = (secondsSinceCaughtUp ?? .infinity) <= Self.maxSilence && lag <= Self.maxLag
    }
}

/// The version every service reports in `health`.
public enum HereaboutsVersion {
    public static let current = "0.1.0"
}

/// The file system a service's file is on, and the file: a full disk makes the
/// service refuse writes (`unavailable`) until space is freed.
public struct StorageUse: Codable, Sendable, Equatable {
    /// Bytes the service may still write (the file system's available blocks; or,
    /// under `HEREABOUTS_DATABASE_MAX_BYTES`, what is left of that when it is less).
    public var freeBytes: Int64
    public var totalBytes: Int64
    /// The database file and its WAL.
    public var fileBytes: Int64

    public init(freeBytes: Int64, totalBytes: Int64, fileBytes: Int64) {
        self.freeBytes = freeBytes
        self.totalBytes = totalBytes
        self.fileBytes = fileBytes
    }
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
