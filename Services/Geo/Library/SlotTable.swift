/// Post id → slot, as an open-addressing hash table over the ids already kept in
/// the byte arena: a million ids cost eight bytes of table each instead of a
/// `String` and a dictionary entry.
///
/// Each entry keeps 31 more bits of the id's hash beside the slot, so a probe
/// reads the id's bytes from the arena (a likely cache miss) only when those bits
/// agree, which is almost only for the id itself.
struct SlotTable: Sendable {
    /// 0 is an empty entry, 1 a removed one; a live entry is `tag << 32 | slot`
    /// with the tag's lowest bit set, so it is neither.
    private static let empty: UInt64 = 0
    private static let removed: UInt64 = 1

    private var table = [UInt64](repeating: SlotTable.empty, count: 1024)
    /// Entries plus removed markers (which probes still walk past).
    private var used = 0

    /// Makes room for `count` ids without growing on the way (a load at start-up).
    mutating func reserve(_ count: Int, idOf: (Int32) -> ArenaSpan, bytes: Arena<UInt8>) {
        guard count * 4 > table.count * 3 else { return }
        rehash(minimumCount: count, idOf: idOf, bytes: bytes)
    }

    /// The slot of `id`, given each slot's id bytes.
    func slot(of id: String, idOf: (Int32) -> ArenaSpan, bytes: Arena<UInt8>) -> Int32? {
        var id = id
        return id.withUTF8 { key in
            let mask = table.count - 1
            let hash = Self.hash(key)
            var index = hash.index & mask
            while true {
                let entry = table[index]
                if entry == Self.empty { return nil }
                if Self.tag(of: entry) == hash.tag, bytes.withElements(idOf(Self.slot(of: entry)), { Arena<UInt8>.compare($0, key) == 0 }) {
                    return Self.slot(of: entry)
                }
                index = (index + 1) & mask
            }
        }
    }

    /// Points `id` at `slot`, replacing what it pointed at; returns the old slot.
    @discardableResult
    mutating func set(_ id: String, slot: Int32, idOf: (Int32) -> ArenaSpan, bytes: Arena<UInt8>) -> Int32? {
        if (used + 1) * 4 > table.count * 3 { rehash(minimumCount: used + 1, idOf: idOf, bytes: bytes) }
        var id = id
        return id.withUTF8 { key in
            let mask = table.count - 1
            let hash = Self.hash(key)
            let new = Self.entry(slot: slot, tag: hash.tag)
            var index = hash.index & mask
            var firstFree: Int?
            while true {
                let entry = table[index]
                if entry == Self.empty { break }
                if entry == Self.removed {
                    if firstFree == nil { firstFree = index }
                } else if Self.tag(of: entry) == hash.tag,
                          bytes.withElements(idOf(Self.slot(of: entry)), { Arena<UInt8>.compare($0, key) == 0 }) {
                    table[index] = new
                    return Self.slot(of: entry)
                }
                index = (index + 1) & mask
            }
            if let firstFree {
                table[firstFree] = new
            } else {
                table[index] = new
                used += 1
            }
            return nil
        }
    }

    /// Forgets `id`; returns the slot it pointed at.
    @discardableResult
    mutating func remove(_ id: String, idOf: (Int32) -> ArenaSpan, bytes: Arena<UInt8>) -> Int32? {
        var id = id
        return id.withUTF8 { key in
            let mask = table.count - 1
            let hash = Self.hash(key)
            var index = hash.index & mask
            while true {
                let entry = table[index]
                if entry == Self.empty { return nil }
                if Self.tag(of: entry) == hash.tag, bytes.withElements(idOf(Self.slot(of: entry)), { Arena<UInt8>.compare($0, key) == 0 }) {
                    table[index] = Self.removed
                    return Self.slot(of: entry)
                }
                index = (index + 1) & mask
            }
        }
    }

    /// Gives every entry its post's new slot (the posts were laid out anew); an
    /// entry's place depends on its id alone, so it stays where it is.
    mutating func renumber(_ newSlot: (Int32) -> Int32) {
        for index in table.indices where table[index] > Self.removed {
            let entry = table[index]
            table[index] = Self.entry(slot: newSlot(Self.slot(of: entry)), tag: Self.tag(of: entry))
        }
    }

    var memoryBytes: Int { table.count * 8 }

    private mutating func rehash(minimumCount: Int, idOf: (Int32) -> ArenaSpan, bytes: Arena<UInt8>) {
        let live = table.filter { $0 > Self.removed }
        var size = table.count
        while max(live.count, minimumCount) * 2 >= size { size *= 2 }
        table = [UInt64](repeating: Self.empty, count: size)
        used = 0
        let mask = size - 1
        for entry in live {
            var index = bytes.withElements(idOf(Self.slot(of: entry))) { Self.hash($0).index } & mask
            while table[index] != Self.empty { index = (index + 1) & mask }
            table[index] = entry
            used += 1
        }
    }

    @inline(__always)
    private static func entry(slot: Int32, tag: UInt32) -> UInt64 { UInt64(tag) << 32 | UInt64(UInt32(bitPattern: slot)) }
    @inline(__always)
    private static func slot(of entry: UInt64) -> Int32 { Int32(bitPattern: UInt32(truncatingIfNeeded: entry)) }
    @inline(__always)
    private static func tag(of entry: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: entry >> 32) }

    /// FNV-1a: ids are short, and the table only needs an even spread. The low bits
    /// place an entry, the high bits (made odd) are its tag.
    @inline(__always)
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> (index: Int, tag: UInt32) {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let mixed = hash ^ (hash >> 29)
        return (Int(truncatingIfNeeded: mixed & 0x7FFF_FFFF), UInt32(truncatingIfNeeded: hash >> 32) | 1)
    }
}

extension SlotTable {
    /// The table as it is, for an index snapshot.
    func write(to writer: SnapshotWriter) {
        writer.write(array: table)
        writer.write(int: used)
    }

    init(from reader: inout SnapshotReader) throws {
        self.init()
        table = try reader.array()
        used = try reader.int()
        guard table.count >= 1, table.count & (table.count - 1) == 0, used <= table.count else {
            throw IndexSnapshot.Unreadable(description: "the id table is malformed")
        }
    }

    /// Whether every entry names a slot below `count` (a snapshot's table against its records).
    func slotsAreBelow(_ count: Int) -> Bool {
        table.allSatisfy { entry in
            entry == Self.empty || entry == Self.removed || (0..<Int32(clamping: count)).contains(Self.slot(of: entry))
        }
    }
}
