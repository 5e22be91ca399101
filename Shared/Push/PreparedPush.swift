import NIOCore

/// A push ready to leave: what takes work to make (the payload, the token, Web Push's
/// encryption) is made, and its connection's event loop is known. `send()` hands it to
/// the connection; called on `eventLoop`, nothing on the way to its outcome needs a
/// thread hand-over. A sender that starts many pushes at once (`PushSender`) prepares
/// them on its own thread and starts them all in one task on their loop: from another
/// thread, each future's callback would be a hand-over (a lock, a task, a wake-up of
/// the loop) of its own, about six a push.
public struct PreparedPush: Sendable {
    /// The loop the push's request leaves on and its outcome completes on.
    public let eventLoop: any EventLoop
    private let start: @Sendable () -> EventLoopFuture<PushOutcome>

    init(on eventLoop: any EventLoop, _ start: @escaping @Sendable () -> EventLoopFuture<PushOutcome>) {
        self.eventLoop = eventLoop
        self.start = start
    }

    /// A push whose outcome is known before it leaves (it cannot leave).
    public init(_ outcome: PushOutcome, on eventLoop: any EventLoop) {
        self.init(on: eventLoop) { eventLoop.makeSucceededFuture(outcome) }
    }

    /// Sends it; never fails: every way it can end is an outcome.
    public func send() -> EventLoopFuture<PushOutcome> {
        start()
    }
}
