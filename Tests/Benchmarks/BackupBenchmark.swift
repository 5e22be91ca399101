import Contracts
import Foundation
import ServiceClient
import ServiceKit
import ServiceKitTesting
import Synchronization
import Wire

/// Issue 25's backup figures: `catalogue.backup` of the catalogue holding the
/// benchmark dataset while creates keep coming, its duration, and the creates'
/// latency beside the same load without a backup.
struct BackupBenchmark {
    var seconds: Double
    var directory: URL
    var dataset: URL
    var report: BenchmarkReport

    func run() throws -> String {
        let stack = try BenchStack(directory: directory, services: ["auth", "catalogue"])
        defer { stack.stop() }
        let token = try stack.register("provider@example.org").accessToken
        let endpoint = stack.endpoint("catalogue")
        let imported = try DatasetImport.run(try DatasetPost.load(dataset), token: token, endpoint: endpoint)

        let okPrefix = Data(#""ok":true"#.utf8)
        let load = { @Sendable (round: String) -> LoadResult in
            LoadGenerator.run(endpoint: endpoint, clients: 4, seconds: seconds, request: { client, sequence in
                let body = JSONObject([("kind", .string("offer")), ("title", .string("Bike \(client)-\(sequence)")),
                                       ("lat", .number(.double(52.09))), ("lon", .number(.double(5.12)))])
                return [RequestEnvelope.encode(id: "\(round)-\(client)-\(sequence)", op: CatalogueAPI.create.name, token: token, body: .object(body))]
            }, check: { $0.range(of: okPrefix) != nil })
        }
        // Alternating: creates alone, then creates with a backup started a second in.
        var rows = ""
        var quiet: [LoadResult] = [], during: [LoadResult] = []
        var durations: [Double] = []
        for round in 0..<3 {
            quiet.append(load("q\(round)"))
            let backup = Mutex<(reply: BackupReply?, seconds: Double)>((nil, 0))
            let thread = ServiceThread(name: "backup") {
                Thread.sleep(forTimeInterval: 2)
                let client = ServiceClient(service: "catalogue", endpoint: endpoint, timeout: 600, tries: 1)
                defer { client.close() }
                let started = Date()
                let reply = try? client.call(BackupAPI.backup("catalogue"), BackupRequest(name: "bench-\(round)"))
                backup.withLock { $0 = (reply, Date().timeIntervalSince(started)) }
            }
            during.append(load("b\(round)"))
            thread.join()
            let (taken, took) = backup.withLock { $0 }
            guard let reply = taken else { throw PeerError("catalogue.backup failed in round \(round + 1)") }
            durations.append(took)
            try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: reply.file).deletingLastPathComponent().path)
            rows += "| \(round + 1) | \(format(took, 1)) s | \(format(Double(reply.bytes) / 1_048_576)) MiB "
                + "| \(format(quiet[round].rate)) / \(format(during[round].rate)) "
                + "| \(format(quiet[round].percentile(0.99), 2)) / \(format(during[round].percentile(0.99), 2)) "
                + "| \(quiet[round].errors + during[round].errors) |\n"
        }
        let p99Quiet = Statistics.median(quiet.map { $0.percentile(0.99) }), p99During = Statistics.median(during.map { $0.percentile(0.99) })
        let log = try report.record("backup", columns: ["backup s", "create p99 ms", "create p99 ms during", "creates/s during"],
                                    values: [Statistics.median(durations), p99Quiet, p99During, Statistics.median(during.map(\.rate))],
                                    digits: 2)
        return """
        ## Backups: the catalogue copied while it serves

        \(Machine.measured(with: "`make bench`"))
        `catalogue-service` holding the benchmark dataset's posts (imported first,
        \(format(imported.seconds, 1)) s), and `catalogue.backup` (`VACUUM INTO` on a read-only connection of its own) started
        2 s into \(format(seconds)) s of creates from 4 clients; the same load without a backup before it, alternating,
        3 rounds. A backup that outlasts the load's window goes on alone.

        | round | backup took | copy | creates/s alone / during | create p99 ms alone / during | errors |
        |---|---|---|---|---|---|
        \(rows)
        This run's medians: backup \(format(Statistics.median(durations), 1)) s, creates' p99 \(format(p99Quiet, 2)) ms alone and
        \(format(p99During, 2)) ms with a backup under way. Over every run of this build in the log: backup
        \(log.headline(0, unit: " s", digits: 1)), p99 during \(log.headline(2, unit: " ms", digits: 2)).
        """
    }
}
