import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Starts executables with `posix_spawn`, for `here up`'s services and for the tests'
/// and benchmarks' child processes.
///
/// Not Foundation's `Process`: on Linux its `run()` reads `/proc/self/fd` to find the
/// descriptors to close and copies each entry's whole 256-byte `d_name`, past the end
/// of glibc's directory buffer; with about 1,360 descriptors open (a full `swift test`)
/// the last entry can sit within 256 bytes of an unmapped page, and the copy crashes the
/// process (seen in CI as SIGSEGV in `memcpy` under `Process.run()`). Here the child
/// closes every descriptor from 3 up itself (`posix_spawn_file_actions_addclosefrom_np`),
/// so it inherits only the three it is given, and nothing is read from `/proc`.
public enum Spawn {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// A file, created when missing; appended to or truncated.
        case file(String, append: Bool)
        /// A pipe: the child gets its reading end as standard input, its writing end as
        /// output; this process closes that end once the child has it (as `Process` does),
        /// so reading to the end of output sees the child's end.
        case pipe(Pipe)
        /// For standard error: wherever standard output goes.
        case standardOutput
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Starts `path` and returns its process id; the caller reaps it (`wait`, or a `SpawnedProcess`).
    /// - Parameter ownGroup: in a process group of its own, so a Ctrl-C in the terminal
    ///   reaches only this process, which stops its children itself.
    public static func launch(_ path: String, arguments: [String] = [], environment: [String: String],
                              stdin: Stream = .null, stdout: Stream, stderr: Stream = .standardOutput,
                              ownGroup: Bool = true) throws(Failure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var handedOver: [FileHandle] = []
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .file(let file, let append):
                posix_spawn_file_actions_addopen(&actions, target, file, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0o644)
            case .pipe(let pipe):
                let end = target == 0 ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                posix_spawn_file_actions_adddup2(&actions, end.fileDescriptor, target)
                handedOver.append(end)
            case .standardOutput:
                posix_spawn_file_actions_adddup2(&actions, 1, target)
            }
        }
        _ = addCloseFrom?(&actions, 3)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Signals as a fresh process has them: a child inherits what this process ignores
        // (ServiceLifecycle ignores SIGTERM to catch it through Dispatch) and what the
        // launching thread blocks, and a child that ignores SIGTERM cannot be stopped.
        var flags = Int32(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)
        var all = sigset_t(), none = sigset_t()
        sigfillset(&all)
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setsigmask(&attributes, &none)
        if ownGroup {
            flags |= Int32(POSIX_SPAWN_SETPGROUP)
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        posix_spawnattr_setflags(&attributes, Int16(flags))
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        guard result == 0 else { throw Failure(description: "cannot start \(path): \(String(cString: strerror(result)))") }
        // One pipe may serve as both output and error: its end is closed once.
        var closed = Set<ObjectIdentifier>()
        for end in handedOver where closed.insert(ObjectIdentifier(end)).inserted {
            try? end.close()
        }
        return pid
    }

    typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np` (2.34 on), declared only under
    /// `_GNU_SOURCE`, which Swift's Glibc module is not built with: looked up at run time.
    /// Without it (an older C library), the child inherits what is not close-on-exec.
    static let addCloseFrom: AddCloseFrom? = dlsym(nil, "posix_spawn_file_actions_addclosefrom_np")
        .map { unsafeBitCast($0, to: AddCloseFrom.self) }

    /// Starts `path`, waits for it to end and reaps it: its exit status (see `wait`).
    public static func run(_ path: String, arguments: [String] = [], environment: [String: String],
                           stdout: Stream, ownGroup: Bool = true) throws(Failure) -> Int32 {
        wait(try launch(path, arguments: arguments, environment: environment, stdout: stdout, ownGroup: ownGroup))
    }

    /// Waits for `pid` to end and reaps it: its exit status, or 128 + the signal that ended it.
    public static func wait(_ pid: pid_t) -> Int32 {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 {
            if errno != EINTR { return -1 }
        }
        return exitStatus(status)
    }

    static func exitStatus(_ status: Int32) -> Int32 {
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }
}

/// A child process one object owns: whether it runs, its exit, signals. Any thread may
/// ask; the one that sees the exit first reaps the child and keeps its status for all.
public final class SpawnedProcess: Sendable {
    public let processIdentifier: pid_t
    /// The exit status once reaped (see `Spawn.wait`).
    private let exit = Mutex<Int32?>(nil)
    private let children: SpawnedChildren

    /// - Parameter children: the set it is counted in while it runs (`SpawnedChildren.all`
    ///   unless a test keeps its own).
    public init(_ path: String, arguments: [String] = [], environment: [String: String],
                stdin: Spawn.Stream = .null, stdout: Spawn.Stream, stderr: Spawn.Stream = .standardOutput,
                children: SpawnedChildren = .all) throws(Spawn.Failure) {
        self.children = children
        processIdentifier = try Spawn.launch(path, arguments: arguments, environment: environment,
                                             stdin: stdin, stdout: stdout, stderr: stderr)
        children.started(self)
    }

    public var isRunning: Bool { reap() == nil }

    /// The exit status, or 128 + the signal that ended it; 0 while it runs (ask `isRunning`).
    public var terminationStatus: Int32 { reap() ?? 0 }

    /// Blocks until the child has ended: `waitid` with `WNOWAIT` waits without reaping, so
    /// the reaping (and the status) stays with `reap()`, under the lock.
    public func waitUntilExit() {
        while reap() == nil {
            var info = siginfo_t()
            if waitid(P_PID, id_t(processIdentifier), &info, WEXITED | WNOWAIT) == -1 && errno != EINTR { return }
        }
    }

    public func terminate() { signal(SIGTERM) }

    public func signal(_ number: Int32) {
        // Once reaped, the id may be another process's.
        exit.withLock { status in
            if status == nil { _ = kill(processIdentifier, number) }
        }
    }

    /// The status if the child has ended (reaping it the first time), nil while it runs.
    private func reap() -> Int32? {
        exit.withLock { known in
            if let known { return known }
            var status: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(processIdentifier, &status, WNOHANG) } while result == -1 && errno == EINTR
            switch result {
            case processIdentifier: known = Spawn.exitStatus(status)
            case -1: known = -1  // not a child of this process (any more): nothing to wait for
            default: return nil
            }
            // Out of the set as it is reaped: from now on the id may be another process's.
            children.ended(processIdentifier)
            return known
        }
    }
}

/// The `SpawnedProcess`es not yet reaped (running, or ended and not yet asked), so that a
/// command-line tool can stop them when it is stopped. Its children are in process groups of their own (`Spawn.launch`), so a
/// Ctrl-C in the terminal reaches the tool alone: a benchmark stopped that way left its
/// services, nginx and Redis running, holding their ports and cores for the next run.
public final class SpawnedChildren: Sendable {
    /// Every `SpawnedProcess` of this process not given another set.
    public static let all = SpawnedChildren()

    /// By process id; a process leaves once reaped (its id may then be another's).
    private let running = Mutex<[pid_t: SpawnedProcess]>([:])

    public init() {}

    func started(_ process: SpawnedProcess) { running.withLock { $0[process.processIdentifier] = process } }
    func ended(_ pid: pid_t) { running.withLock { _ = $0.removeValue(forKey: pid) } }

    /// The ids of the children not yet reaped.
    public var processIdentifiers: Set<pid_t> { running.withLock { Set($0.keys) } }

    /// Sends SIGTERM to every child still running, waits up to `grace` for them to end,
    /// and sends SIGKILL to those that have not. Returns how many were sent SIGTERM.
    /// Through each `SpawnedProcess`, which reaps its child and never signals an id it
    /// has reaped.
    @discardableResult
    public func terminateAll(grace: Duration = .seconds(10)) -> Int {
        let processes = running.withLock { Array($0.values) }
        for process in processes { process.terminate() }
        let clock = ContinuousClock()
        let deadline = clock.now + grace
        var remaining = processes.filter(\.isRunning)
        while !remaining.isEmpty, clock.now < deadline {
            usleep(20_000)
            remaining = remaining.filter(\.isRunning)
        }
        for process in remaining { process.signal(SIGKILL) }
        return processes.count
    }

    /// From now on SIGINT and SIGTERM stop this process's children (`terminateAll`), run
    /// `then` (a scratch directory's removal), and end the process as the signal would
    /// have (status 128 + the signal). For command-line tools; a process that stops on
    /// these signals by other means (a service, `here up`) does not call it.
    public func terminateAllOnSignals(then: @escaping @Sendable () -> Void = {}) {
        for number in [SIGINT, SIGTERM] {
            // The default action would end the process before the handler ran.
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { [self] in
                terminateAll()
                then()
                exit(128 + number)
            }
            source.resume()
            let kept = KeptSource(source: source)
            SpawnedChildren.signalSources.withLock { $0.append(kept) }
        }
    }

    /// A signal source, kept for the life of the process (one released is cancelled); only
    /// held, never used from another thread.
    private struct KeptSource: @unchecked Sendable {
        let source: any DispatchSourceSignal
    }

    private static let signalSources = Mutex<[KeptSource]>([])
}
