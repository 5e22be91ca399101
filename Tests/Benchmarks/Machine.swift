import Foundation
import Spawn
import Wire

/// What the numbers were measured on.
enum Machine {
    /// The CPU's model, as /proc/cpuinfo names it.
    static let cpu: String = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
        .split(separator: "\n").first { $0.hasPrefix("model name") }?
        .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"

    /// The kind of machine a run-log row was measured on: runs compare with runs on
    /// the same kind only (a ZeroMQ echo differed 2× between two kinds of 2 cores).
    static var kind: String { "\(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores" }

    static var description: String {
        let memory = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("MemTotal") }?
            .split(separator: " ").dropFirst().first.flatMap { Double($0) }.map { String(format: "%.0f GiB", $0 / 1_048_576) } ?? "?"
        return "\(ProcessInfo.processInfo.activeProcessorCount) cores (\(cpu)), \(memory) RAM, "
            + "\(ProcessInfo.processInfo.operatingSystemVersionString), loopback, shared machine"
    }

    /// The commit the measured code was built from (`git describe`-like: the short
    /// hash, `+changes` when tracked files outside Docs/ differed from it); `unknown`
    /// outside a checkout.
    static let build: String = {
        guard let head = git(["rev-parse", "--short", "HEAD"]) else { return "unknown" }
        let changed = git(["status", "--porcelain", "--untracked-files=no", "--", ".", ":!Docs"]).map { !$0.isEmpty } ?? false
        return changed ? "\(head)+changes" : head
    }()

    private static func git(_ arguments: [String]) -> String? {
        let output = Pipe()
        guard let pid = try? Spawn.launch("/usr/bin/git", arguments: arguments, environment: ProcessInfo.processInfo.environment,
                                          stdout: .pipe(output), stderr: .null) else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        guard Spawn.wait(pid) == 0 else { return nil }
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// "Measured <when> with <command>, release build <build>, on <machine>."
    static func measured(with command: String) -> String {
        "Measured \(Timestamp.format(Date())) with \(command), release build `\(build)`, on \(description)."
    }
}

/// The report: generated sections between `<!-- bench:NAME:start/end -->` markers,
/// replaced by each run, and run logs between `<!-- bench:NAME:runs:start/end -->`,
/// which each run adds a row to and never rewrites.
struct BenchmarkReport: Sendable {
    let path: String

    func write(section name: String, body: String) throws {
        var text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "# Benchmarks\n"
        Self.replace(in: &text, between: "<!-- bench:\(name):start -->", and: "<!-- bench:\(name):end -->",
                     with: body.trimmingCharacters(in: .whitespacesAndNewlines))
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// Adds this run's row (when, build, then `values`) to the run log `name` and
    /// returns the log with it. The logs stand together at the end of the page, under
    /// "Run logs", a table each.
    func record(_ name: String, columns: [String], values: [Double], digits: Int = 0) throws -> RunLog {
        var text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "# Benchmarks\n"
        let start = "<!-- bench:\(name):runs:start -->", end = "<!-- bench:\(name):runs:end -->"
        var rows: [RunLog.Row] = []
        if let from = text.range(of: start), let to = text.range(of: end), from.upperBound < to.lowerBound {
            rows = text[from.upperBound..<to.lowerBound].split(separator: "\n").compactMap(RunLog.Row.init(markdown:))
        } else {
            if !text.contains(Self.logsHeading) { text += "\n\(Self.logsHeading)\n\n\(Self.logsIntroduction)\n" }
            text += "\n### \(name)\n"
        }
        rows.append(RunLog.Row(when: Timestamp.format(Date()), build: Machine.build, machine: Machine.kind, values: values))
        let log = RunLog(columns: columns, rows: rows, digits: digits)
        Self.replace(in: &text, between: start, and: end, with: log.table)
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return log
    }

    static let logsHeading = "## Run logs"
    static let logsIntroduction = """
        Every run of each benchmark, one row per run, added by the run and never rewritten: when it ended
        (UTC), the commit it was built from (`+changes`: with uncommitted changes), the machine it ran on
        (CPU model and cores), and its figures (each the median of that run's rounds). Headlines above are
        medians of these rows on the machine of the run that wrote them, never the best of them, and never
        mixed across machines.
        """

    private static func replace(in text: inout String, between start: String, and end: String, with body: String) {
        let block = "\(start)\n\(body)\n\(end)"
        if let startRange = text.range(of: start), let endRange = text.range(of: end), startRange.lowerBound < endRange.lowerBound {
            text.replaceSubrange(startRange.lowerBound..<endRange.upperBound, with: block)
        } else {
            text += "\n\(block)\n"
        }
    }
}

/// Every recorded run of one benchmark: when, which build, its figures.
struct RunLog {
    struct Row {
        var when: String
        var build: String
        var machine: String
        var values: [Double]

        init(when: String, build: String, machine: String, values: [Double]) {
            self.when = when
            self.build = build
            self.machine = machine
            self.values = values
        }

        /// A row of the log's table: `| when | `build` | machine | v1 | v2 | … |`.
        init?(markdown line: Substring) {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 4, cells[0].first?.isNumber == true else { return nil }
            let values = cells.dropFirst(3).map { Double($0.replacingOccurrences(of: ",", with: "")) }
            guard values.allSatisfy({ $0 != nil }) else { return nil }
            self.init(when: cells[0], build: cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`")), machine: cells[2],
                      values: values.compactMap { $0 })
        }
    }

    let columns: [String]
    let rows: [Row]
    let digits: Int

    var table: String {
        var lines = ["| run (UTC) | build | machine | " + columns.joined(separator: " | ") + " |",
                     "|---|---|---|" + String(repeating: "---|", count: columns.count)]
        for row in rows {
            lines.append("| \(row.when) | `\(row.build)` | \(row.machine) | " + row.values.map { format($0, digits) }.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n")
    }

    /// The runs on this kind of machine.
    var thisMachine: [Row] { rows.filter { $0.machine == Machine.kind } }

    /// This build's runs on this kind of machine.
    var current: [Row] { thisMachine.filter { $0.build == Machine.build } }

    /// The median of a column over `rows` (this build's on this machine by default).
    func median(_ column: Int, of rows: [Row]? = nil) -> Double {
        Statistics.median((rows ?? current).compactMap { column < $0.values.count ? $0.values[column] : nil })
    }

    /// "the median of this build's N runs on this machine (of all M runs on it: X)";
    /// runs on other kinds of machine are never in it.
    func headline(_ column: Int, unit: String = "", digits: Int? = nil) -> String {
        let digits = digits ?? self.digits
        let mine = current.count
        var text = "**\(format(median(column), digits))\(unit)**, the median of "
            + (mine == 1 ? "this build's one run" : "this build's \(mine) runs") + " on this machine (\(Machine.kind))"
        if thisMachine.count > mine {
            text += " (of all \(thisMachine.count) runs on it, builds differing: \(format(median(column, of: thisMachine), digits))\(unit))"
        }
        return text
    }
}

enum Statistics {
    static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}

func format(_ value: Double, _ digits: Int = 0) -> String {
    String(format: "%.\(digits)f", value)
}
