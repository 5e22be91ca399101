import ArgumentParser
import Foundation
import Spawn

@main
struct BenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hereabouts-bench",
        abstract: "Measures Hereabouts against the peers its issues name, in one run.",
        subcommands: [All.self, EchoServerCommand.self, Load.self, Micro.self, Soak.self])
}

struct All: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "all", abstract: "Runs every benchmark and writes the report.")

    @Option(help: "Seconds per measured run.")
    var seconds: Double = 8

    @Option(help: "The report to update (sections between bench markers are replaced).")
    var output: String = "Docs/BENCHMARKS.md"

    @Option(help: "The directory gen_dataset.py wrote (posts.tsv, queries.tsv); without it the dataset figures are skipped.")
    var dataset: String?

    @Option(help: "Which benchmarks to run: foundation, catalogue, messaging, push, fairness, edge, watches, backup, geo, replicas (all by default).")
    var only: [String] = []

    @Option(help: "WebSockets the edge benchmark opens.")
    var sockets: Int = 10_000

    @Option(help: "Watches the watches benchmark opens.")
    var watches: Int = 100_000

    @Option(help: "Where the services under test keep their files (a fresh directory is made inside it).")
    var scratch: String = "/tmp"

    func run() throws {
        let directory = URL(fileURLWithPath: scratch).appendingPathComponent("hb-bench-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // A Ctrl-C reaches only this process (its children have process groups of their own).
        SpawnedChildren.all.terminateAllOnSignals { try? FileManager.default.removeItem(at: directory) }
        let report = BenchmarkReport(path: output)
        let suites: [(String, () throws -> String)] = [
            ("foundation", { try AuthBenchmark(seconds: seconds, directory: directory.appendingPathComponent("foundation"), report: report).run() }),
            ("catalogue", {
                try CatalogueBenchmark(seconds: seconds, directory: directory.appendingPathComponent("catalogue"),
                                       dataset: dataset.map { URL(fileURLWithPath: $0) }, report: report).run()
            }),
            ("messaging", {
                try MessagingBenchmark(seconds: seconds, directory: directory.appendingPathComponent("messaging"), report: report).run()
            }),
            ("push", {
                try PushBenchmark(seconds: seconds, directory: directory.appendingPathComponent("push"), report: report).run()
            }),
            ("fairness", {
                try FairnessBenchmark(seconds: max(seconds, 10), directory: directory.appendingPathComponent("fairness"), report: report).run()
            }),
            ("edge", {
                try EdgeBenchmark(seconds: seconds, directory: directory.appendingPathComponent("edge"),
                                  dataset: dataset.map { URL(fileURLWithPath: $0) }, sockets: sockets, report: report).run()
            }),
            ("watches", {
                guard let dataset else { return "## Live queries: watches\n\nSkipped: needs `--dataset` (make bench makes it)." }
                return try WatchBenchmark(seconds: seconds, directory: directory.appendingPathComponent("watches"),
                                          dataset: URL(fileURLWithPath: dataset), report: report, watches: watches).run()
            }),
            ("backup", {
                guard let dataset else { return "## Backups\n\nSkipped: needs `--dataset` (make bench makes it)." }
                return try BackupBenchmark(seconds: max(seconds, 20), directory: directory.appendingPathComponent("backup"),
                                           dataset: URL(fileURLWithPath: dataset), report: report).run()
            }),
            ("geo", {
                guard let dataset else { return "## Geo\n\nSkipped: needs `--dataset` (make bench makes it)." }
                return try GeoBenchmark(seconds: seconds, directory: directory.appendingPathComponent("geo"),
                                        dataset: URL(fileURLWithPath: dataset), report: report).run()
            }),
            ("hours", {
                guard let dataset else { return "## Opening hours: openNow filtering\n\nSkipped: needs `--dataset` (make bench makes it)." }
                return try HoursBenchmark(seconds: seconds, directory: directory.appendingPathComponent("hours"),
                                          dataset: URL(fileURLWithPath: dataset), report: report).run()
            }),
            ("replicas", {
                guard let dataset else { return "## Geo replicas\n\nSkipped: needs `--dataset` (make bench makes it)." }
                return try ReplicaBenchmark(seconds: seconds, directory: directory.appendingPathComponent("replicas"),
                                            dataset: URL(fileURLWithPath: dataset), report: report).run()
            }),
        ]
        for (name, suite) in suites where only.isEmpty || only.contains(name) {
            try FileManager.default.createDirectory(at: directory.appendingPathComponent(name), withIntermediateDirectories: true)
            let section = try suite()
            print(section)
            try report.write(section: name, body: section)
        }
    }
}

struct EchoServerCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "echo-server", abstract: "A raw ZeroMQ ROUTER echo, for comparison.")

    @Option var endpoint: String
    @Option(name: .customLong("reply-bytes")) var replyBytes: Int

    func run() throws {
        try EchoServer.run(endpoint: endpoint, replyBytes: replyBytes)
    }
}

struct Load: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Sends one request in a closed loop from several clients (for profiling).")

    @Option var endpoint: String
    @Option(help: "Frame 0 of the request, as JSON text; {n} is replaced by a number unique to each request.") var request: String?
    @Option(help: "Instead of one request: geo.search of each of the queries in this dataset directory (queries.tsv), in turn, as the geo benchmark sends them.")
    var searchQueries: String?
    @Option var clients: Int = 4
    @Option var seconds: Double = 10

    func validate() throws {
        guard (request == nil) != (searchQueries == nil) else { throw ValidationError("give either --request or --search-queries") }
    }

    func run() throws {
        let frames = try searchQueries.map { try DatasetQuery.load(URL(fileURLWithPath: $0)).map(\.searchFrame) }
            ?? [Data(request!.utf8)]
        let template = request.flatMap { $0.contains("{n}") ? $0 : nil }
        let clients = self.clients
        let result = LoadGenerator.run(endpoint: endpoint, clients: clients, seconds: seconds, request: { client, sequence in
            if let template { return [Data(template.replacingOccurrences(of: "{n}", with: "\(client)x\(sequence)").utf8)] }
            return [frames[(client * frames.count / clients + sequence) % frames.count]]
        },
                                       check: { $0.contains(Data(#""ok":true"#.utf8)) })
        print("\(format(result.rate)) req/s, p50 \(format(result.percentile(0.5), 2)) ms, p99 \(format(result.percentile(0.99), 2)) ms, errors \(result.errors)")
    }
}
