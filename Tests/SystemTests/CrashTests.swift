import Contracts
import Foundation
import GRDB
import ServiceClient
import ServiceKitTesting
import Synchronization
import Testing
import Wire

@Suite("kill -9 under here up", .serialized)
struct CrashTests {
    /// The pid of `executable` among `parent`'s children, from /proc.
    private func child(named executable: String, of parent: Int32) -> Int32? {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        for entry in entries {
            guard let pid = Int32(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
            guard fields.count > 1, Int32(fields[1]) == parent,
                  let command = try? String(contentsOfFile: "/proc/\(pid)/cmdline", encoding: .utf8),
                  command.hasSuffix("\(executable)\0") || command.contains("/\(executable)\0") else { continue }
            return pid
        }
        return nil
    }

    @Test("20 rounds of kill -9 during a stream of acknowledged creates: every acknowledged post is there once, the file is intact, geo follows with nothing missing or doubled")
    func catalogueCrashes() throws {
        let directory = URL(fileURLWithPath: "/tmp/hb-crash-\(Identifier.random(count: 8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = ["HEREABOUTS_DATA_DIR": directory.path, "HEREABOUTS_LOG_LEVEL": "error", "HEREABOUTS_RATE_LIMIT": "0",
                           "HEREABOUTS_BIN_DIR": ChildProcess.binDirectory.path, "XDG_CONFIG_HOME": directory.appendingPathComponent("config").path]
        for service in ServiceEndpoints.services {
            environment[ServiceEndpoints.requestsVariable(service)] = try ChildProcess.freeEndpoint()
            environment[ServiceEndpoints.eventsVariable(service)] = try ChildProcess.freeEndpoint()
        }
        let up = try ChildProcess("here", arguments: ["up", "--plaintext", "--max-backoff", "0"], environment: environment, log: directory.appendingPathComponent("up.log"))
        defer { up.terminate() }
        for _ in 0..<600 where !up.logText.contains("all services ready") { Thread.sleep(forTimeInterval: 0.1) }
        try #require(up.logText.contains("all services ready"), "\(up.logText)")
        let endpoint = { (service: String) in environment[ServiceEndpoints.requestsVariable(service)]! }
        let token = try ServiceClient(service: "auth", endpoint: endpoint("auth"), timeout: 20, tries: 1)
            .call(AuthAPI.register, RegisterRequest(email: "crash@example.org", password: "password1")).accessToken

        let acknowledged = Mutex<[String: String]>([:])  // title → post id
        var killed = 0
        for round in 0..<20 {
            let catalogueEndpoint = endpoint("catalogue")
            let stop = Atomic<Bool>(false)
            let done = DispatchSemaphore(value: 0)
            Thread.detachNewThread {
                defer { done.signal() }
                let client = ServiceClient(service: "catalogue", endpoint: catalogueEndpoint, timeout: 1, tries: 1)
                defer { client.close() }
                var n = 0
                while !stop.load(ordering: .relaxed) {
                    n += 1
                    let title = "r\(round)-\(n)"
                    if let post = try? client.call(CatalogueAPI.create, CreatePostRequest(PostDraft(kind: "offer", title: title, lat: 1, lon: 1)),
                                                   token: token, id: "c-\(title)").post {
                        acknowledged.withLock { $0[title] = post.id }
                    }
                }
            }
            Thread.sleep(forTimeInterval: 0.2)
            if let pid = child(named: "catalogue-service", of: up.process.processIdentifier) {
                kill(pid, SIGKILL)
                killed += 1
            }
            Thread.sleep(forTimeInterval: 0.3)
            stop.store(true, ordering: .relaxed)
            done.wait()
            #expect(waitUntilHealthy(service: "catalogue", endpoint: endpoint("catalogue"), timeout: 30), "round \(round)")
        }
        #expect(killed == 20)

        // Every acknowledged create is there, once; nothing else doubled.
        let client = ServiceClient(service: "catalogue", endpoint: endpoint("catalogue"), timeout: 20, tries: 1)
        defer { client.close() }
        var stored: [String: String] = [:]
        var titles: [String] = []
        var cursor: String?
        repeat {
            let page = try client.call(CatalogueAPI.list, ListPostsRequest(limit: 100, cursor: cursor))
            for post in page.posts {
                stored[post.title] = post.id
                titles.append(post.title)
            }
            cursor = page.nextCursor
        } while cursor != nil
        let acked = acknowledged.withLock { $0 }
        #expect(Set(titles).count == titles.count, "a create was applied twice")
        let missing = acked.filter { stored[$0.key] != $0.value }
        #expect(missing.isEmpty, "acknowledged but not stored: \(missing.keys.sorted().prefix(5))")
        print("catalogue crash rounds: 20 kills, \(acked.count) acknowledged creates, \(titles.count) stored, \(missing.count) missing")

        // The file is intact.
        let database = try DatabaseQueue(path: directory.appendingPathComponent("catalogue.sqlite").path,
                                         configuration: { var c = Configuration(); c.readonly = true; return c }())
        #expect(try database.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")

        // Geo followed every change: the same posts, none missing or doubled.
        let geo = ServiceClient(service: "geo", endpoint: endpoint("geo"), timeout: 20, tries: 1)
        defer { geo.close() }
        var geoCount = -1
        for _ in 0..<200 where geoCount != titles.count {
            geoCount = (try? geo.call(GeoAPI.stats, Empty()).posts) ?? -1
            if geoCount != titles.count { Thread.sleep(forTimeInterval: 0.05) }
        }
        #expect(geoCount == titles.count)
    }
}
