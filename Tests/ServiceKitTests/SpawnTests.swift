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
}
