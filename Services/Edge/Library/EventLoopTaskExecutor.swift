import NIOCore

/// Runs a connection's task, and every task and continuation it awaits, on the
/// event loop that reads and writes the connection.
///
/// Without it a connection's task runs wherever Swift's global executor puts it
/// (with NIO as that executor: a loop picked round-robin), so a request read on one
/// loop is handled on another, its reply from a service resumes it on a third, and
/// its response hops back to the connection's loop to be written: a thread wake-up
/// each time. On its own loop, work the loop enqueues for itself costs no wake-up.
final class EventLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
