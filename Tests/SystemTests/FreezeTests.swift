import Contracts
import Foundation
import ServiceClient
import ServiceKitTesting
import TestThreads
import Testing
import Wire

@Suite("A frozen service", .serialized, .ownThread)
struct FreezeTests {
    @Test("while auth is stopped (SIGSTOP) callers get unavailable within their timeout; after SIGCONT the same client works again")
    func stopAndContinue() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-freeze-\(Identifier.random(count: 8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let endpoint = try ChildProcess.freeEndpoint()
        let auth = try ChildProcess("auth-service", arguments: ["--endpoint", endpoint, "--events", try ChildProcess.freeEndpoint()],
                                    environment: ["HEREABOUTS_DATA_DIR": directory.path, "HEREABOUTS_LOG_LEVEL": "error"],
                                    log: directory.appendingPathComponent("auth.log"))
        defer {
            kill(auth.process.processIdentifier, SIGCONT)
            auth.terminate()
        }
        try #require(waitUntilHealthy(service: "auth", endpoint: endpoint), "\(auth.logText)")
        let client = ServiceClient(service: "auth", endpoint: endpoint, timeout: 0.5, tries: 2)
        defer { client.close() }
        #expect(try client.call(AuthAPI.health, Empty()).status == "ok")

        #expect(Self.stop(auth.process.processIdentifier))
        let started = Date()
        do {
            _ = try client.call(AuthAPI.health, Empty())
            Issue.record("a stopped service answered")
        } catch let error as ServiceError {
            #expect(error.code == .unavailable)
        }
        // Two tries of half a second, and no hanging beyond them.
        #expect(Date().timeIntervalSince(started) < 3)

        kill(auth.process.processIdentifier, SIGCONT)
        var answered = false
        for _ in 0..<20 where !answered {
            answered = (try? client.call(AuthAPI.health, Empty())) != nil
        }
        #expect(answered)
    }

    /// State `T` in /proc/<pid>/stat: stopped by a signal.
    /// Stops `pid` (SIGSTOP), returning once the kernel reports it stopped (within a
    /// second): the signal is delivered asynchronously, and a request sent at once may
    /// still be answered.
    static func stop(_ pid: Int32) -> Bool {
        kill(pid, SIGSTOP)
        for _ in 0..<100 where !isStopped(pid) { usleep(10_000) }
        return isStopped(pid)
    }

    private static func isStopped(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(close, offsetBy: 2)] == "T"
    }
}
