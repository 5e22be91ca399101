import Foundation
import Testing
import Wire

@Suite("Identifiers")
struct IdentifierTests {
    @Test("time-ordered ids are 22 valid characters, sort by creation time, and never start with '-'")
    func sortable() throws {
        let instants = [Date(timeIntervalSince1970: 0), Date(timeIntervalSince1970: 1_000_000_000.123),
                        Date(timeIntervalSince1970: 1_795_000_000), Date(timeIntervalSince1970: 1_795_000_000.001),
                        Date(timeIntervalSince1970: 4_000_000_000)]
        let ids = instants.map { Identifier.sortable(at: $0) }
        for id in ids {
            #expect(id.utf8.count == 22)
            #expect(!id.hasPrefix("-"))
            #expect(throws: Never.self) { try Check.entityID(id, field: "id") }
        }
        #expect(ids.map { Array($0.utf8) }.sorted { $0.lexicographicallyPrecedes($1) } == ids.map { Array($0.utf8) })
    }

    @Test("ids made at the same millisecond differ")
    func unique() {
        let now = Date()
        let ids = (0..<10_000).map { _ in Identifier.sortable(at: now) }
        #expect(Set(ids).count == ids.count)
    }
}
