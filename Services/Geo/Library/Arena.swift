/// Where an arena keeps one value: a global offset and a length.
struct ArenaSpan: Sendable, Equatable {
    var offset: UInt32
    var length: UInt32

    static let empty = ArenaSpan(offset: 0, length: 0)
}

/// Append-only storage of many small runs of elements (the bytes of ids, titles and
/// hit JSON; the word ids of posts) in large chunks.
///
/// A million posts as separate `String`s and arrays would cost a heap allocation
/// (and its header) each; runs in shared chunks cost only their bytes. Chunks never
/// move once allocated, so appending never copies what is stored, and a run never
/// crosses a chunk.
struct Arena<Element: BitwiseCopyable & Sendable>: Sendable {
    private var chunks: [[Element]] = []
    private let chunkShift: UInt32
    private var chunkCapacity: Int { 1 << Int(chunkShift) }

    /// - Parameter chunkShift: chunks hold `1 << chunkShift` elements.
    init(chunkShift: UInt32 = 20) {
        self.chunkShift = chunkShift
    }

    /// Elements allocated, for reporting memory.
    var capacity: Int { chunks.count * chunkCapacity }

    mutating func append<C: Collection>(_ elements: C) -> ArenaSpan where C.Element == Element {
        let count = elements.count
        precondition(count <= chunkCapacity, "a run larger than a chunk")
        if count == 0 { return .empty }
        if chunks.isEmpty || chunks[chunks.count - 1].count + count > chunkCapacity {
            var chunk: [Element] = []
            chunk.reserveCapacity(chunkCapacity)
            chunks.append(chunk)
        }
        let chunkIndex = chunks.count - 1
        let offset = UInt32(chunkIndex) << chunkShift | UInt32(chunks[chunkIndex].count)
        chunks[chunkIndex].append(contentsOf: elements)
        return ArenaSpan(offset: offset, length: UInt32(count))
    }

    func withElements<R>(_ span: ArenaSpan, _ body: (UnsafeBufferPointer<Element>) -> R) -> R {
        if span.length == 0 { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        let chunk = Int(span.offset >> chunkShift)
        let start = Int(span.offset & (UInt32(chunkCapacity) - 1))
        return chunks[chunk].withUnsafeBufferPointer { buffer in
            body(UnsafeBufferPointer(rebasing: buffer[start..<start + Int(span.length)]))
        }
    }
}

extension Arena where Element == UInt8 {
    func string(_ span: ArenaSpan) -> String {
        withElements(span) { String(decoding: $0, as: UTF8.self) }
    }

    /// Orders two runs of bytes as strings of Unicode scalars are ordered.
    func compare(_ a: ArenaSpan, _ b: ArenaSpan) -> Int {
        withElements(a) { left in
            withElements(b) { right in Self.compare(left, right) }
        }
    }

    static func compare(_ left: UnsafeBufferPointer<UInt8>, _ right: UnsafeBufferPointer<UInt8>) -> Int {
        let common = min(left.count, right.count)
        for index in 0..<common where left[index] != right[index] {
            return left[index] < right[index] ? -1 : 1
        }
        return left.count == right.count ? 0 : (left.count < right.count ? -1 : 1)
    }
}

extension Arena {
    /// Whether `span` names stored elements (a snapshot's records are checked
    /// against their arenas before any search reads them).
    func contains(_ span: ArenaSpan) -> Bool {
        if span.length == 0 { return true }
        let chunk = Int(span.offset >> chunkShift)
        let start = Int(span.offset & (UInt32(chunkCapacity) - 1))
        return chunk < chunks.count && start + Int(span.length) <= chunks[chunk].count
    }

    /// Its chunks, for an index snapshot.
    func write(to writer: SnapshotWriter) {
        writer.write(int: Int(chunkShift))
        writer.write(nested: chunks)
    }

    /// An arena as `write` wrote it; the last chunk keeps room for more runs.
    init(from reader: inout SnapshotReader) throws {
        let shift = try reader.int()
        guard (0...30).contains(shift) else { throw IndexSnapshot.Unreadable(description: "an arena's chunk size is out of range") }
        self.init(chunkShift: UInt32(shift))
        chunks = try reader.nested()
        guard chunks.allSatisfy({ $0.count <= chunkCapacity }) else { throw IndexSnapshot.Unreadable(description: "an arena's chunk is too large") }
        if !chunks.isEmpty { chunks[chunks.count - 1].reserveCapacity(chunkCapacity) }
    }
}
