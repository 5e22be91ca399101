@testable import Edge
import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing

/// `RequestDeadlines` on a channel whose clock the test moves: the deadline of each
/// stage of a connection, and none while the edge itself is answering.
@Suite("Request deadlines")
struct RequestDeadlinesTests {
    private let head = HTTPRequestPart.head(HTTPRequest(method: .post, scheme: nil, authority: "x", path: "/v1/auth/login"))

    private func channel() throws -> (EmbeddedChannel, EmbeddedEventLoop) {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(handler: RequestDeadlines(headers: .seconds(2), body: .seconds(5)), loop: loop)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        return (channel, loop)
    }

    /// Moves the clock to just before `milliseconds` from now (the connection still
    /// open) and to just after (closed).
    private func expectClosed(_ channel: EmbeddedChannel, _ loop: EmbeddedEventLoop, after milliseconds: Int64,
                              sourceLocation: SourceLocation = #_sourceLocation) {
        loop.advanceTime(by: .milliseconds(milliseconds - 100))
        #expect(channel.isActive, "open until the deadline", sourceLocation: sourceLocation)
        loop.advanceTime(by: .milliseconds(200))
        #expect(!channel.isActive, "closed at the deadline", sourceLocation: sourceLocation)
    }

    @Test("a connection that sends no head is closed at the header deadline")
    func noHead() throws {
        let (channel, loop) = try channel()
        expectClosed(channel, loop, after: 2_000)
    }

    @Test("after a head the body has its own deadline, from the head on; the header deadline no longer counts")
    func bodyDeadline() throws {
        let (channel, loop) = try channel()
        loop.advanceTime(by: .seconds(1))
        try channel.writeInbound(head)
        expectClosed(channel, loop, after: 5_000)  // open past the header deadline, closed at the body's
    }

    @Test("while the edge answers no deadline runs; the next head is due from the end of the answer")
    func betweenRequests() throws {
        let (channel, loop) = try channel()
        try channel.writeInbound(head)
        try channel.writeInbound(HTTPRequestPart.end(nil))
        loop.advanceTime(by: .seconds(60))  // a slow answer
        #expect(channel.isActive)
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: .ok)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        loop.advanceTime(by: .milliseconds(1_900))
        #expect(channel.isActive)
        try channel.writeInbound(head)  // the next request in time: its body's deadline now
        expectClosed(channel, loop, after: 5_000)
    }

    @Test("a keep-alive connection that sends its next head too late is closed, however many requests came before")
    func idleAfterAnswers() throws {
        let (channel, loop) = try channel()
        for _ in 0..<3 {
            try channel.writeInbound(head)
            try channel.writeInbound(HTTPRequestPart.end(nil))
            loop.advanceTime(by: .milliseconds(500))
            try channel.writeOutbound(HTTPResponsePart.end(nil))
            loop.advanceTime(by: .milliseconds(1_500))
        }
        #expect(channel.isActive)
        loop.advanceTime(by: .milliseconds(600))
        #expect(!channel.isActive)
    }
}
