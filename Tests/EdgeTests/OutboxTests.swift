import Testing
@testable import Edge

/// A socket whose reader is too slow is closed, never allowed to grow the edge's
/// memory: its outbox holds at most `EdgeSettings.socketBacklog` unsent events.
@Suite("A socket's outbox")
struct OutboxTests {
    @Test("past 1,000 unsent events the outbox is marked overflowed and finished; what it held is still written first")
    func overflow() async {
        let outbox = EventHub.Outbox()
        for index in 0..<EdgeSettings.socketBacklog {
            #expect(outbox.send("event \(index)"))
        }
        let before = outbox.overflowed.load(ordering: .relaxed)
        #expect(!before)
        #expect(!outbox.send("one too many"))
        let after = outbox.overflowed.load(ordering: .relaxed)
        #expect(after)
        #expect(!outbox.send("after the end"))
        var written: [String] = []
        for await text in outbox.stream { written.append(text) }
        #expect(written.count == EdgeSettings.socketBacklog && written.first == "event 0" && written.last == "event 999")
    }
}
