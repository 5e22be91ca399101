import Wire

/// The body of every `<service>.changes` op.
public struct ChangesRequest: ValidatedBody, Equatable {
    /// Changes with a seq greater than this are returned.
    public var after: Int64
    public var limit: Int

    public static let maxLimit = 1000

    public init(after: Int64 = 0, limit: Int = 100) {
        self.after = after
        self.limit = limit
    }

    enum CodingKeys: String, CodingKey { case after, limit }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        after = try container.decodeIfPresent(Int64.self, forKey: .after) ?? 0
        limit = try container.decodeIfPresent(Int.self, forKey: .limit) ?? 100
    }

    public func validate() throws {
        try Check.range(after, field: "after", in: 0...Int64.max)
        try Check.range(limit, field: "limit", in: 1...Self.maxLimit)
    }
}

/// The reply of every `<service>.changes` op.
public struct ChangesReply<Change: Codable & Sendable>: Codable, Sendable {
    public var changes: [Change]
    /// The seq of the last change returned, or `after` when none was.
    public var lastSeq: Int64
    /// The highest seq the feed holds now. Below a follower's cursor, the source was
    /// put back to an older copy of its file: the follower replays the feed from 0.
    /// Absent from sources older than this field (then nothing is checked).
    public var headSeq: Int64?
    /// Which history of the source's file the seqs count in. A file put back from a
    /// backup has its copy's epoch, so a follower seeing it change replays the feed,
    /// even when the restored file has since passed the follower's cursor.
    public var epoch: String?

    public init(changes: [Change], lastSeq: Int64, headSeq: Int64? = nil, epoch: String? = nil) {
        self.changes = changes
        self.lastSeq = lastSeq
        self.headSeq = headSeq
        self.epoch = epoch
    }
}

/// What a change feed carries for one entity: the change's seq, and its type.
public protocol FeedChange: Codable, Sendable {
    var seq: Int64 { get }
    /// The id of the entity the change is about (a post's, a user's).
    var entity: String { get }
    /// The change that says `entity` is gone: what a follower applies for an entity
    /// it holds that a replay of the whole feed did not bring.
    static func deletion(of entity: String, seq: Int64) -> Self
}

/// Published on a service's PUB socket after each commit that added changes.
public struct ChangeNotice: Codable, Sendable, Equatable {
    public var seq: Int64
    public init(seq: Int64) { self.seq = seq }

    /// `auth.changed/`, `catalogue.changed/`: topics end with `/` so one never
    /// prefixes another.
    public static func topic(service: String) -> String { "\(service).changed/" }
}
