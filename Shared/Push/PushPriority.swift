#if canImport(Glibc)
import Glibc
#endif

/// How the threads that deliver pushes compete for the cores with the ones that answer
/// requests.
///
/// A push is background work: the message is committed and acknowledged before it
/// leaves, and the outbox keeps it until it has. On a machine where sends keep the
/// cores busy, push threads that compete as equals take a core at the moments a
/// request's thread wakes, and the sends queue behind them (on two cores that cost a
/// sixth of the send rate: Docs/BENCHMARKS.md, Pushes).
public enum PushPriority: String, Sendable, CaseIterable {
    /// The push sender's thread at nice 19: a request's thread gets the core first. When
    /// every core is busy it would get a sliver (by the kernel's weights, 15 against each
    /// busy nice-0 thread's 1024), so once pushes fall behind the sender hands its passes
    /// to a thread of normal priority until they have caught up (chat's `PushSender`).
    /// (Linux's `SCHED_IDLE` gained a little more on an idle-enough machine and stalled
    /// pushes for a minute on a saturated one: BENCHMARKS.md.)
    case background
    /// The push threads compete with every other thread as equals.
    case normal
}

/// Scheduling of the calling thread (Linux; elsewhere these do nothing).
public enum ThreadScheduling {
    /// The nice value of `PushPriority.background`.
    public static let backgroundNice: Int32 = 19

    /// Lowers the calling thread's priority to nice 19. An unprivileged thread cannot raise
    /// it again, and a thread it starts inherits it, so only threads that do nothing but
    /// background work (and start no shared ones) enter it.
    @discardableResult
    public static func enterBackground() -> Bool {
        #if os(Linux)
        guard let id = currentThreadID() else { return false }
        return setpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(id), backgroundNice) == 0
        #else
        return false
        #endif
    }

    /// The calling thread's id in the kernel (`/proc/thread-self`), nil where there is none.
    public static func currentThreadID() -> Int32? {
        #if os(Linux)
        var buffer = [CChar](repeating: 0, count: 64)
        let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let link = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return link.split(separator: "/").last.flatMap { Int32($0) }
        #else
        return nil
        #endif
    }

    /// A thread's nice value, nil when it cannot be read.
    public static func nice(ofThread id: Int32) -> Int32? {
        #if os(Linux)
        errno = 0
        let nice = getpriority(__priority_which_t(PRIO_PROCESS.rawValue), id_t(id))
        return nice == -1 && errno != 0 ? nil : nice
        #else
        return nil
        #endif
    }
}
