import Foundation
import Testing
@testable import Wire

@Suite("Identifier")
struct IdentifierTests {
    @Test("time-ordered ids are 22 valid characters, sort by creation time, and never start with '-'")
    func sortable() throws {
        // A sequence of its own, so that the far-future instants do not move this process's ids.
        var sequence = Identifier.SortableSequence()
        let instants = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_000_000_000.123),
                        Date(timeIntervalSince1970: 1_795_000_000), Date(timeIntervalSince1970: 1_795_000_000.001),
                        Date(timeIntervalSince1970: 4_000_000_000)]
        let ids = instants.map { sequence.next(at: $0) }
        #expect(Set(ids.map { $0.prefix(8) }).count == instants.count, "each carries its own millisecond")
        for id in ids {
            #expect(id.utf8.count == 22)
            #expect(!id.hasPrefix("-"))
            #expect(throws: Never.self) { try Check.entityID(id, field: "id") }
        }
        #expect(ids.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) } == ids.map { Array($0.utf8) })
    }

    @Test("ids made in the same millisecond, or with the clock set back, sort in the order they were made")
    func monotonic() throws {
        var sequence = Identifier.SortableSequence()
        let now = Date()
        let ids = (0..<10_000).map { _ in sequence.next(at: now) }
        #expect(Set(ids).count == ids.count)
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 }, "each sorts after the one before")
        let setBack = sequence.next(at: now.addingTimeInterval(-5))
        #expect(setBack > (try #require(ids.last)), "the clock set back keeps the order")
        #expect(Identifier.sortable() < Identifier.sortable(), "the process's own sequence too")
    }
}
