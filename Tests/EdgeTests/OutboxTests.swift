import Foundation
import Synchronization
import TestThreads
import Testing
@testable import Edge

/// A socket whose reader is too slow is closed, never allowed to grow the edge's
/// memory: at most `EdgeSettings.socketBacklog` of its events are unwritten at once.
@Suite("A socket's outbox", .ownThread)
struct OutboxTests {
    /// A socket's channel as the outbox sees it: texts handed to it, written when
    /// the test says so, and how often it was asked to close the socket.
    final class FakeChannel: Sendable {
        let handed = Mutex<[(message: EventHub.Outbox.Message, written: @Sendable () -> Void)]>([])
        let closesAsked = Atomic<Int>(0)

        func outbox(deadline: Date = .distantFuture) -> EventHub.Outbox {
            EventHub.Outbox(deadline: deadline, writer: { message, written in self.handed.withLock { $0.append((message, written)) } },
                            requestClose: { self.closesAsked.add(1, ordering: .relaxed) })
        }

        func writeAll() {
            let all = handed.withLock { handed in
                defer { handed.removeAll() }
                return handed
            }
            all.forEach { $0.written() }
        }

        var texts: [String] {
            handed.withLock { $0.map { if case .text(let text) = $0.message { text } else { "(ping)" } } }
        }
    }

    @Test("past 1,000 unwritten events the outbox is marked overflowed and closed with 1008; written ones make room")
    func overflow() {
        let channel = FakeChannel()
        let outbox = channel.outbox()
        for index in 0..<EdgeSettings.socketBacklog - 1 {
            #expect(outbox.send("event \(index)"))
        }
        channel.writeAll()
        for index in 0..<EdgeSettings.socketBacklog {
            #expect(outbox.send("later \(index)"))
        }
        let before = outbox.overflowed.load(ordering: .relaxed)
        #expect(!before)
        #expect(!outbox.send("one too many"))
        let after = outbox.overflowed.load(ordering: .relaxed)
        #expect(after)
        #expect(outbox.closing?.code == .policyViolation)
        #expect(channel.closesAsked.load(ordering: .relaxed) == 1)
        #expect(!outbox.send("after the end"))
        #expect(channel.texts.count == EdgeSettings.socketBacklog && channel.texts.last == "later 999")
    }

    @Test("a deadline passed closes it with 4401, telling a socket never signed in from one whose token expired")
    func deadlines() {
        let start = Date()
        let channel = FakeChannel()
        let silent = channel.outbox(deadline: start.addingTimeInterval(10))
        #expect(!silent.expire(at: start.addingTimeInterval(9.9)))
        #expect(silent.expire(at: start.addingTimeInterval(10)))
        #expect(silent.closing?.code == .unknown(4401) && silent.closing?.reason == "send a token first")
        #expect(channel.closesAsked.load(ordering: .relaxed) == 1)

        let renewed = channel.outbox(deadline: start.addingTimeInterval(10))
        renewed.signedIn(until: start.addingTimeInterval(60))
        #expect(!renewed.expire(at: start.addingTimeInterval(30)))
        renewed.signedIn(until: start.addingTimeInterval(900))
        renewed.heard(at: start.addingTimeInterval(880))
        #expect(!renewed.expire(at: start.addingTimeInterval(899)))
        #expect(renewed.expire(at: start.addingTimeInterval(900)))
        #expect(renewed.closing?.reason.contains("expired") == true)
    }

    @Test("the first reason to close is the one the client is told; the socket handler's own reason does not ask it back")
    func firstReasonWins() {
        let channel = FakeChannel()
        let outbox = channel.outbox()
        outbox.close(.binary, fromSocket: true)
        outbox.close(.slowReader)
        outbox.close(nil)
        #expect(outbox.closing?.code == .unacceptableData)
        #expect(channel.closesAsked.load(ordering: .relaxed) == 0)
        #expect(!outbox.send("after the end"))
        #expect(channel.texts.isEmpty)
    }

    @Test("a ping goes the way of the events and counts with them")
    func pings() {
        let channel = FakeChannel()
        let outbox = channel.outbox()
        outbox.send("event")
        outbox.ping()
        #expect(channel.texts == ["event", "(ping)"])
        outbox.close(nil)
        outbox.ping()
        #expect(channel.texts.count == 2)
    }

    @Test("a client that sends nothing, not even a pong, for over a minute is closed with 1001")
    func silence() {
        let start = Date()
        let channel = FakeChannel()
        let outbox = channel.outbox()
        outbox.heard(at: start)
        #expect(!outbox.expire(at: start.addingTimeInterval(EdgeSettings.socketSilenceLimit)))
        outbox.heard(at: start.addingTimeInterval(50))
        #expect(!outbox.expire(at: start.addingTimeInterval(EdgeSettings.socketSilenceLimit + 1)))
        #expect(outbox.expire(at: start.addingTimeInterval(50 + EdgeSettings.socketSilenceLimit + 1)))
        #expect(outbox.closing?.code == .goingAway && outbox.closing?.reason == "no answer to pings")
        #expect(channel.closesAsked.load(ordering: .relaxed) == 1)
    }
}
