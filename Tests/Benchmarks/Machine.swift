import Foundation

/// What the numbers were measured on.
enum Machine {
    static var description: String {
        let cpu = (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }?
            .split(separator: ":", maxSplits: 1).last?.trimmingCharacters(in: .whitespaces) ?? "unknown CPU"
        let memory = (try? String(contentsOfFile: "/proc/meminfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("MemTotal") }?
            .split(separator: " ").dropFirst().first.flatMap { Double($0) }.map { String(format: "%.0f GiB", $0 / 1_048_576) } ?? "?"
        return "\(ProcessInfo.processInfo.activeProcessorCount) cores (\(cpu)), \(memory) RAM, "
            + "\(ProcessInfo.processInfo.operatingSystemVersionString), loopback, shared machine"
    }
}

/// Replaces (or appends) the section between `<!-- bench:NAME -->` markers.
enum BenchmarkReport {
    static func write(section name: String, body: String, to path: String) throws {
        let start = "<!-- bench:\(name):start -->"
        let end = "<!-- bench:\(name):end -->"
        let block = "\(start)\n\(body.trimmingCharacters(in: .whitespacesAndNewlines))\n\(end)"
        var text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? "# Benchmarks\n"
        if let startRange = text.range(of: start), let endRange = text.range(of: end), startRange.lowerBound < endRange.lowerBound {
            text.replaceSubrange(startRange.lowerBound..<endRange.upperBound, with: block)
        } else {
            text += "\n\(block)\n"
        }
        try text.write(toFile: path, atomically: true, encoding: .utf8)
    }
}

func format(_ value: Double, _ digits: Int = 0) -> String {
    String(format: "%.\(digits)f", value)
}
