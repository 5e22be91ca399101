import Foundation
import Spawn
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite("Child processes by posix_spawn")
struct SpawnTests {
    @Test("a child inherits only its three standard streams, even a descriptor that is not close-on-exec")
    func closesTheRest() throws {
        let pipe = Pipe()
        let stray = pipe.fileHandleForWriting.fileDescriptor
        _ = fcntl(stray, F_SETFD, 0)  // inheritable, as a descriptor another library opened may be
        let child = try SpawnedProcess("/bin/sh", arguments: ["-c", "[ ! -e /proc/$$/fd/\(stray) ]"], environment: [:], stdout: .null)
        child.waitUntilExit()
        #expect(child.terminationStatus == 0, "descriptor \(stray) reached the child")
    }

    @Test("the exit status, or 128 + the signal; running until it ends; streams to a file and from a pipe")
    func exitAndStreams() throws {
        let exits = try SpawnedProcess("/bin/sh", arguments: ["-c", "exit 3"], environment: [:], stdout: .null)
        exits.waitUntilExit()
        #expect(!exits.isRunning && exits.terminationStatus == 3)

        let sleeper = try SpawnedProcess("/bin/sleep", arguments: ["30"], environment: [:], stdout: .null)
        #expect(sleeper.isRunning)
        sleeper.terminate()
        sleeper.waitUntilExit()
        #expect(!sleeper.isRunning && sleeper.terminationStatus == 128 + SIGTERM)

        let file = FileManager.default.temporaryDirectory.appendingPathComponent("spawn-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: file) }
        let input = Pipe()
        let echo = try SpawnedProcess("/bin/sh", arguments: ["-c", "read line; echo \"out $line\"; echo err >&2"], environment: [:],
                                      stdin: .pipe(input), stdout: .file(file.path, append: false))
        input.fileHandleForWriting.write(Data("hello\n".utf8))
        try input.fileHandleForWriting.close()
        echo.waitUntilExit()
        #expect(echo.terminationStatus == 0)
        #expect(try String(contentsOf: file, encoding: .utf8) == "out hello\nerr\n")
    }

    /// What a benchmark stopped by Ctrl-C does for its services (`terminateAllOnSignals`),
    /// on a set of this test's own: `SpawnedChildren.all` holds the other tests' children.
    @Test("terminateAll stops the children still running, SIGKILL for one that outlives the grace; an ended one is not counted")
    func terminateAll() throws {
        let children = SpawnedChildren()
        let ended = try SpawnedProcess("/bin/sh", arguments: ["-c", "exit 0"], environment: [:], stdout: .null, children: children)
        ended.waitUntilExit()
        let sleepers = try (0..<2).map { _ in
            try SpawnedProcess("/bin/sleep", arguments: ["30"], environment: [:], stdout: .null, children: children)
        }
        // Ignores SIGTERM (kept across `exec`), and says so once it does: a SIGTERM before
        // the trap would end it. Only SIGKILL ends it then.
        let ready = Pipe()
        let stubborn = try SpawnedProcess("/bin/sh", arguments: ["-c", "trap '' TERM; echo ignoring; exec sleep 30"], environment: [:],
                                          stdout: .pipe(ready), children: children)
        #expect(String(decoding: ready.fileHandleForReading.readData(ofLength: 9), as: UTF8.self) == "ignoring\n")
        #expect(children.processIdentifiers == Set((sleepers + [stubborn]).map(\.processIdentifier)))

        // Long enough for a loaded machine to end the sleepers on SIGTERM; the stubborn one waits it out.
        #expect(children.terminateAll(grace: .seconds(2)) == 3)
        for sleeper in sleepers {
            sleeper.waitUntilExit()
            #expect(sleeper.terminationStatus == 128 + SIGTERM)
        }
        stubborn.waitUntilExit()
        #expect(stubborn.terminationStatus == 128 + SIGKILL)
        #expect(children.processIdentifiers.isEmpty)
    }
}
