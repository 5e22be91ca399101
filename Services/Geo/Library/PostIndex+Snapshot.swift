import Foundation
import OpeningHours

extension PostIndex {
    /// Writes the whole index to `path` (see `IndexSnapshot`), tagged with the
    /// database's `id`, and with the feed position it holds; returns that position.
    /// Holds the read lock: searches go on, changes wait.
    @discardableResult
    func writeSnapshot(to path: String, id: String) throws -> Int64 {
        let writer = try SnapshotWriter(path: path)
        let position = lock.withReadLock {
            writer.write(string: id)
            writer.write(int: Int(feedPosition))
            writer.write(array: records)
            writer.write(int: liveCount)
            slots.write(to: writer)
            bytes.write(to: writer)
            terms.write(to: writer)
            vocabulary.write(to: writer)
            writer.write(strings: Self.names(tagIDs))
            writer.write(strings: kindNames)
            writer.write(strings: ownerNames)
            // Ids from 1 (0 is "no hours").
            let scheduleKeys = Self.names(scheduleIDs)
            writer.write(strings: scheduleKeys.map(\.hours))
            writer.write(strings: scheduleKeys.map(\.timezone))
            writer.write(strings: scheduleKeys.map(\.point))
            writer.write(int: trees.count)
            for tree in trees { tree.write(to: writer) }
            writer.write(array: pending)
            return feedPosition
        }
        try writer.finish()
        return position
    }

    /// Reads an index `writeSnapshot` wrote with `id`; throws `IndexSnapshot.Unreadable`
    /// for any other file, and checks every record's and point's references before
    /// a search could follow them.
    static func readSnapshot(from path: String, id: String) throws -> PostIndex {
        var reader = try SnapshotReader(path: path)
        let written = try reader.string()
        guard written == id else { throw IndexSnapshot.Unreadable(description: "it is of another database") }
        let index = PostIndex()
        index.feedPosition = Int64(try reader.int())
        index.records = try reader.array()
        index.liveCount = try reader.int()
        index.slots = try SlotTable(from: &reader)
        index.bytes = try Arena(from: &reader)
        index.terms = try Arena(from: &reader)
        index.vocabulary = try Vocabulary(from: &reader)
        index.tagIDs = Self.ids(try reader.strings())
        index.kindNames = try reader.strings()
        index.kindIDs = Self.ids(index.kindNames)
        index.ownerNames = try reader.strings()
        index.ownerIDs = Self.ids(index.ownerNames)
        let hours = try reader.strings(), zones = try reader.strings(), points = try reader.strings()
        guard hours.count == zones.count, hours.count == points.count else {
            throw IndexSnapshot.Unreadable(description: "the opening hours are malformed")
        }
        for ((text, zoneName), pointText) in zip(zip(hours, zones), points) {
            guard let parsed = index.placeBoundHours[text] ?? (try? OpeningHours(parsing: text)),
                  let zone = TimeZoneNames.timeZone(named: zoneName) else {
                throw IndexSnapshot.Unreadable(description: "opening hours it holds no longer parse")
            }
            let coordinates = pointText.split(separator: ",").compactMap { Double($0) }
            guard pointText.isEmpty || coordinates.count == 2 else { throw IndexSnapshot.Unreadable(description: "a schedule's point is malformed") }
            if !pointText.isEmpty { index.placeBoundHours[text] = parsed }
            index.scheduleIDs[ScheduleKey(hours: text, timezone: zoneName, point: pointText)] = UInt32(index.schedules.count)
            index.schedules.append(Schedule(hours: parsed, timeZone: zone,
                                            point: coordinates.count == 2 ? (coordinates[0], coordinates[1]) : nil))
        }
        let treeCount = try reader.int()
        guard (0...64).contains(treeCount) else { throw IndexSnapshot.Unreadable(description: "it holds \(treeCount) trees") }
        for _ in 0..<treeCount { index.trees.append(try KDTree(from: &reader)) }
        index.pending = try reader.array()
        try index.checkReferences()
        return index
    }

    /// Every record's runs inside their arenas and its names inside their tables,
    /// every id-table entry, point, pending slot and posting a record.
    private func checkReferences() throws {
        let wordCount = UInt32(vocabulary.words.count), tagCount = UInt32(tagIDs.count)
        let kinds = UInt32(kindNames.count), owners = UInt32(ownerNames.count), scheduleCount = UInt32(schedules.count)
        var live = 0
        for record in records {
            guard bytes.contains(record.strings), terms.contains(record.terms), record.kind < kinds, record.owner < owners,
                  record.schedule < scheduleCount, Int(record.tagCount) <= Int(record.terms.length),
                  Int(record.idLength) + Int(record.titleLength) + Int(record.foldedLength) + Int(record.tagsLength)
                    + Int(record.refLength) == Int(record.strings.length) else {
                throw IndexSnapshot.Unreadable(description: "a record is out of range")
            }
            let words = Int(record.terms.length) - Int(record.tagCount)
            let valid = terms.withElements(record.terms) { ids in
                ids.prefix(words).allSatisfy { $0 < wordCount } && ids.dropFirst(words).allSatisfy { $0 < tagCount }
            }
            guard valid else { throw IndexSnapshot.Unreadable(description: "a record's words are out of range") }
            if record.alive { live += 1 }
        }
        let slotCount = Int32(records.count)
        guard live == liveCount, slots.slotsAreBelow(records.count),
              trees.allSatisfy({ $0.points.allSatisfy { 0 <= $0.slot && $0.slot < slotCount } }),
              pending.allSatisfy({ 0 <= $0 && $0 < slotCount }),
              vocabulary.postings.allSatisfy({ $0.allSatisfy { 0 <= $0 && $0 < slotCount } }) else {
            throw IndexSnapshot.Unreadable(description: "a slot is out of range")
        }
    }

    /// Names in the order of their ids (which are dense).
    private static func names<Key>(_ ids: [Key: UInt32]) -> [Key] {
        ids.sorted { $0.value < $1.value }.map(\.key)
    }

    private static func ids(_ names: [String]) -> [String: UInt32] {
        var ids: [String: UInt32] = [:]
        ids.reserveCapacity(names.count)
        for (id, name) in names.enumerated() { ids[name] = UInt32(id) }
        return ids
    }
}
