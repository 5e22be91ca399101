/// Post id → slot, as an open-addressing hash table over the ids already kept in
/// the byte arena: a million ids cost four bytes of table each instead of a
/// `String` and a dictionary entry.
struct SlotTable: Sendable {
    private static let empty: Int32 = -1
    private static let removed: Int32 = -2

    private var table = [Int32](repeating: SlotTable.empty, count: 1024)
    /// Entries plus removed markers (which probes still walk past).
    private var used = 0

    /// The slot of `id`, given each slot's id bytes.
    func slot(of id: String, idOf: (Int32) -> ArenaSpan, bytes: Arena<UInt8>) -> Int32? {
        var id = id
        return id.withUTF8 { key in
            let mask = table.count - 1
            var index = Self.hash(key) & mask
            while true {
                let slot = table[index]
                if slot == Self.empty { return nil }
                if slot >= 0, bytes.withElements(idOf(slot), { Arena<UInt8>.compare($0, key) == 0 }) { return slot }
                index = (index + 1) & mask
            }
        }
    }

    /// Points `id` at `slot`, replacing what it pointed at; returns the old slot.
    @discardableResult
    mutating func set(_ id: String, slot: Int32, idOf: (Int32) -> ArenaSpan, bytes: Arena<UInt8>) -> Int32? {
        if (used + 1) * 4 > table.count * 3 { rehash(idOf: idOf, bytes: bytes) }
        var id = id
        return id.withUTF8 { key in
            let mask = table.count - 1
            var index = Self.hash(key) & mask
            var firstFree: Int?
            while true {
                let current = table[index]
                if current == Self.empty { break }
                if current == Self.removed {
                    if firstFree == nil { firstFree = index }
                } else if bytes.withElements(idOf(current), { Arena<UInt8>.compare($0, key) == 0 }) {
                    table[index] = slot
                    return current
                }
                index = (index + 1) & mask
            }
            if let firstFree {
                table[firstFree] = slot
            } else {
                table[index] = slot
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
            var index = Self.hash(key) & mask
            while true {
                let current = table[index]
                if current == Self.empty { return nil }
                if current >= 0, bytes.withElements(idOf(current), { Arena<UInt8>.compare($0, key) == 0 }) {
                    table[index] = Self.removed
                    return current
                }
                index = (index + 1) & mask
            }
        }
    }

    var memoryBytes: Int { table.count * 4 }

    private mutating func rehash(idOf: (Int32) -> ArenaSpan, bytes: Arena<UInt8>) {
        let live = table.filter { $0 >= 0 }
        var size = table.count
        while live.count * 2 >= size { size *= 2 }
        table = [Int32](repeating: Self.empty, count: size)
        used = 0
        let mask = size - 1
        for slot in live {
            var index = bytes.withElements(idOf(slot)) { Self.hash($0) } & mask
            while table[index] != Self.empty { index = (index + 1) & mask }
            table[index] = slot
            used += 1
        }
    }

    /// FNV-1a: ids are short, and the table only needs an even spread.
    private static func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return Int(truncatingIfNeeded: hash ^ (hash >> 29))
    }
}
