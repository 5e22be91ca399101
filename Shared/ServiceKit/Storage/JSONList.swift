import Foundation

/// A list of strings or numbers as one SQL argument: a JSON array, which a statement unpacks with
/// `IN (SELECT value FROM json_each(?))`. The statement's text stays the same for any
/// number of values, so it is prepared once and kept.
public enum JSONList {
    public static func argument(_ values: [String]) -> String {
        String(decoding: (try? JSONEncoder().encode(values)) ?? Data("[]".utf8), as: UTF8.self)
    }

    /// Numbers need no escaping: written directly.
    public static func argument(_ values: [Int64]) -> String {
        "[" + values.map(String.init).joined(separator: ",") + "]"
    }
}
