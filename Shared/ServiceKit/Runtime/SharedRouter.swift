import Foundation
import ServiceClient
import Synchronization
import Wire
import ZeroMQ

/// The server's ROUTER socket, shared by its front threads and its workers.
///
/// A libzmq socket is not thread-safe, but any thread may use it with a full barrier
/// between uses: here a lock. Front threads take requests off it and workers send
/// their replies on it themselves, so no reply crosses a second socket.
///
/// An idle front thread waits on the socket's `ZMQ_FD`, which is edge-triggered: it
/// signals when the socket's state changed since any thread last looked, and any use
/// of the socket (a send too) may consume that signal. So whoever uses the socket
/// while a front thread is idle, and finds input left, wakes the idle threads through
/// a pipe; whoever takes a request and finds more left does the same, so a second
/// front thread starts on the next one while the first is still answering. While no
/// thread is idle nobody is woken: the busy ones look for input again when done.
final class SharedRouter: Sendable {
    private let socket: Mutex<Socket?>
    private let descriptor: Int32
    /// Input is waiting that a waiting thread may not have been told of.
    private let wake: WakePipe
    /// Signalled once, when the front threads are to finish.
    private let stopping: WakePipe
    /// Front threads that found no input and wait (or are about to). Internal for
    /// tests, which stand in for an idle thread.
    let idle = Atomic<Int>(0)

    init(_ socket: sending Socket) throws {
        descriptor = socket.fileDescriptor
        wake = try WakePipe()
        stopping = try WakePipe()
        self.socket = Mutex(socket)
    }

    /// The next request, without waiting; nil when none is queued (or the socket is
    /// closed).
    ///
    /// - Parameter wakingOthers: wake the waiting threads when more input is left,
    ///   so they take it meanwhile (for a server with more than one front thread).
    func take(limits: MessageLimits, wakingOthers: Bool) throws(ZMQError) -> ReceivedMessage? {
        let (message, more) = try socket.withLock { socket throws(ZMQError) -> (ReceivedMessage?, Bool) in
            guard let socket, let message = try socket.receive(wait: false, limits: limits) else { return (nil, false) }
            return (message, wakingOthers && idle.load(ordering: .relaxed) > 0 && socket.hasInput)
        }
        if more { wake.signal() }
        return message
    }

    /// Sends a reply without waiting (a peer gone or over its high-water mark loses it,
    /// as ROUTER sockets do).
    ///
    /// - Parameter wakingFront: wake the front threads when input is waiting: the
    ///   send may have taken the signal they wait for (for senders other than a front
    ///   thread, which looks for input itself next).
    func send(_ frames: [Data], wakingFront: Bool) throws(ZMQError) {
        let waiting = try socket.withLock { socket throws(ZMQError) -> Bool in
            guard let socket else { return false }
            try socket.send(frames, wait: false)
            return wakingFront && idle.load(ordering: .relaxed) > 0 && socket.hasInput
        }
        if waiting { wake.signal() }
    }

    enum Next {
        /// A request; `afterMissedWakeUp` when it was found only once a wait timed
        /// out (its signal went missing).
        case request(ReceivedMessage, afterMissedWakeUp: Bool)
        case finishing
    }

    /// The next request for a front thread, waiting for one; `.finishing` once
    /// `finish` was called.
    func next(limits: MessageLimits, wakingOthers: Bool) throws(ZMQError) -> Next {
        if let message = try take(limits: limits, wakingOthers: wakingOthers) { return .request(message, afterMissedWakeUp: false) }
        idle.add(1, ordering: .relaxed)
        defer { idle.subtract(1, ordering: .relaxed) }
        var timedOut = false
        while true {
            // Looked for again once counted idle: a taker or sender that used the
            // socket before then and saw no thread idle did not wake this one, but
            // left its input for this look (the lock orders the two).
            if let message = try take(limits: limits, wakingOthers: wakingOthers) {
                return .request(message, afterMissedWakeUp: timedOut)
            }
            switch waitForInput() {
            case .finishing: return .finishing
            case .timedOut: timedOut = true
            case .signalled: timedOut = false
            }
        }
    }

    enum Wait {
        /// Signalled: input may be waiting.
        case signalled
        /// Nothing came within the wait's bound.
        case timedOut
        case finishing
    }

    /// Waits until input may be waiting, or until `finish`.
    func waitForInput() -> Wait {
        var poller = Poller()
        poller.addReadable(descriptor: descriptor)
        let wakeIndex = poller.addReadable(descriptor: wake.readEnd)
        let stopIndex = poller.addReadable(descriptor: stopping.readEnd)
        // The bound only limits the cost of a missed signal; none is known to be
        // missed, and the server counts any a timed-out wait finds.
        guard (try? poller.poll(timeout: 250)) ?? 0 > 0 else { return .timedOut }
        if poller.isReadable(stopIndex) { return .finishing }
        if poller.isReadable(wakeIndex) { wake.drain() }
        return .signalled
    }

    /// Ends every front thread's wait for good (the pipe is never drained).
    func finish() { stopping.signal() }

    /// Closes the socket, once no thread will use it again.
    func close() {
        socket.withLock { socket in
            socket?.close()
            socket = nil
        }
    }
}
