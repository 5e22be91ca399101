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

    /// Columns padded to their widest cell (counted in characters).
    public static func table(_ header: [String], _ rows: [[String]]) {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        for row in all {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            print(cells.joined(separator: "  "))
        }
    }

    /// "850 m", "4.2 km", "120 km".
    public static func distance(_ metres: Double) -> String {
        if metres < 1_000 { return "\(Int(metres.rounded())) m" }
        if metres < 100_000 { return String(format: "%.1f km", metres / 1_000) }
        return "\(Int((metres / 1_000).rounded())) km"
    }
}
