import Wire

/// A page of a list that takes only `limit` and `cursor` (`favourites.list`,
/// `chat.conversations`).
public struct PageRequest: ValidatedBody, Equatable {
    public var limit: Int?
    public var cursor: String?

    /// The cursors these lists make are short; anything longer is not one of them.
    public static let maxCursor = 100

    public init(limit: Int? = nil, cursor: String? = nil) {
        self.limit = limit
        self.cursor = cursor
    }

    public func validate() throws {
        _ = try Check.limit(limit)
        if let cursor { try Check.length(cursor, field: "cursor", in: 1...Self.maxCursor) }
    }
}
