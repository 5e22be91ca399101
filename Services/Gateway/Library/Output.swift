import Contracts
import Foundation
import Wire

/// How `here` prints: aligned tables and plain lines for people, one JSON document
/// for scripts (`--json`).
public enum Output {
    public static func json(_ value: some Encodable) throws {
        print(String(decoding: try JSONValueEncoder().encodeData(value, sortsKeys: true), as: UTF8.self))
    }

    public static func json(_ object: JSONObject) {
        print(String(decoding: JSONWriter.data(.object(object), sortsKeys: true), as: UTF8.self))
    }

    /// Columns padded to their widest cell (counted in characters, styles not counted).
    public static func table(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? visibleWidth($0[column]) : 0 }.max() ?? 0 }
        for row in all {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell + String(repeating: " ", count: max(0, widths[index] - visibleWidth(cell)))
            }
            print(cells.joined(separator: "  "))
        }
    }

    /// Whether output may carry terminal styles: standard output is a terminal and
    /// `NO_COLOR` (no-color.org) is unset or empty.
    public static let styled: Bool = isatty(1) != 0 && (ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty

    /// `text` with the stretches `ranges` gives (UTF-16, as geo's highlights count)
    /// in bold when `styled`; as it is otherwise, or where a range does not fit it.
    public static func highlighted(_ text: String, _ ranges: [TextRange], styled: Bool = Output.styled) -> String {
        guard styled, !ranges.isEmpty else { return text }
        var result = ""
        var position = text.startIndex
        for range in ranges {
            guard let bounds = range.range(in: text), bounds.lowerBound >= position else { return text }
            result += text[position..<bounds.lowerBound] + bold + text[bounds] + plain
            position = bounds.upperBound
        }
        return result + text[position...]
    }

    static let bold = "\u{1B}[1m", plain = "\u{1B}[22m"

    /// Characters a terminal shows: styles (`ESC [ … m`) left out.
    static func visibleWidth(_ text: String) -> Int {
        guard text.contains("\u{1B}") else { return text.count }
        var count = 0, inEscape = false
        for character in text {
            if inEscape {
                if character == "m" { inEscape = false }
            } else if character == "\u{1B}" {
                inEscape = true
            } else {
                count += 1
            }
        }
        return count
    }

    /// "850 m", "4.2 km", "120 km".
    public static func distance(_ metres: Double) -> String {
        if metres < 1_000 { return "\(Int(metres.rounded())) m" }
        if metres < 100_000 { return String(format: "%.1f km", metres / 1_000) }
        return "\(Int((metres / 1_000).rounded())) km"
    }
}
