import Foundation

/// The protocol's words, folded and matched the plain way, for brute-force checks:
/// apart from geo's `TextTerms` (which folds character by character through a cache
/// and splits bytes), so an answer checked against this is checked by other code.
///
/// PROTOCOL, geo, Words: runs of letters and digits; lower-cased, accents folded;
/// every word of `q` is a word of the post, except the last, which may start one.
public enum ReferenceText {
    /// Lower-cased with accents removed, by Foundation on the whole text; an accent
    /// (a nonspacing mark) Foundation leaves, one on its own or on a letter it has no
    /// folding for (a diaeresis on an Arabic letter), is removed too.
    public static func fold(_ text: String) -> String {
        let folded = text.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil).lowercased()
        return String(String.UnicodeScalarView(folded.unicodeScalars.filter { $0.properties.generalCategory != .nonspacingMark }))
    }

    public static func words(_ text: String) -> [String] {
        fold(text).split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }

    /// Whether a post holding `texts` (title, text, category, tags) matches `q`.
    public static func matches(_ q: String?, _ texts: [String]) -> Bool {
        let query = words(q ?? "")
        let held = Set(texts.flatMap(words))
        return query.enumerated().allSatisfy { index, word in
            index == query.count - 1 ? held.contains { $0.hasPrefix(word) } : held.contains(word)
        }
    }
}
