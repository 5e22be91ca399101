import Foundation
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

    @Test("a deadline passed closes it with 4401, telling a socket never signed in from one whose token expired")
    func deadlines() async {
        let start = Date()
        let silent = EventHub.Outbox(deadline: start.addingTimeInterval(10))
        #expect(!silent.expire(at: start.addingTimeInterval(9.9)))
        #expect(silent.expire(at: start.addingTimeInterval(10)))
        for await _ in silent.stream {}
        #expect(silent.closing?.code == .unknown(4401) && silent.closing?.reason == "send a token first")

        let renewed = EventHub.Outbox(deadline: start.addingTimeInterval(10))
        renewed.signedIn(until: start.addingTimeInterval(60))
        #expect(!renewed.expire(at: start.addingTimeInterval(30)))
        renewed.signedIn(until: start.addingTimeInterval(900))
        #expect(!renewed.expire(at: start.addingTimeInterval(899)))
        #expect(renewed.expire(at: start.addingTimeInterval(900)))
        #expect(renewed.closing?.reason.contains("expired") == true)
    }

    @Test("the first reason to close is the one the client is told")
    func firstReasonWins() {
        let outbox = EventHub.Outbox()
        outbox.close(.binary)
        outbox.close(.slowReader)
        outbox.close(nil)
        #expect(outbox.closing?.code == .unacceptableData)
        #expect(!outbox.send("after the end"))
    }
}
