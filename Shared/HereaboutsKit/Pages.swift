/// One page of a list and the cursor of the next, if more follow.
public struct Page<Element: Sendable>: Sendable {
    public var items: [Element]
    public var nextCursor: String?

    public init(items: [Element], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

/// A list the server gives a page at a time, as one sequence of its elements: the
/// next page is asked for when the last one's elements have been read, and the
/// sequence ends after the last page.
///
/// ```swift
/// for try await post in hereabouts.favourites() { … }
/// let firstTen = try await hereabouts.favourites().prefix(10).reduce(into: []) { $0.append($1) }
/// ```
public struct Pages<Element: Sendable>: AsyncSequence, Sendable {
    let fetch: @Sendable (_ cursor: String?) async throws -> Page<Element>

    public init(_ fetch: @escaping @Sendable (_ cursor: String?) async throws -> Page<Element>) {
        self.fetch = fetch
    }

    /// The page that begins at `cursor` (nil: the first): for apps that page by hand,
    /// e.g. as a list scrolls.
    public func page(at cursor: String? = nil) async throws -> Page<Element> {
        try await fetch(cursor)
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(fetch: fetch)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let fetch: @Sendable (String?) async throws -> Page<Element>
        var buffer: [Element] = []
        var index = 0
        var cursor: String?
        var finished = false

        public mutating func next() async throws -> Element? {
            while index == buffer.count {
                guard !finished else { return nil }
                let page = try await fetch(cursor)
                buffer = page.items
                index = 0
                cursor = page.nextCursor
                finished = page.nextCursor == nil
            }
            defer { index += 1 }
            return buffer[index]
        }
    }
}
