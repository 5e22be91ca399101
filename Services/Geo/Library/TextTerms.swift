import Foundation

/// Words as geo matches them: lower-cased, accents folded, split at anything that is
/// not a letter or a digit. "Café-Bar Köln" holds `cafe`, `bar` and `koln`.
///
/// Query strings go through the same function, so query syntax does not exist:
/// `"burger" OR NEAR(` is the three words `burger`, `or` and `near`.
public enum TextTerms {
    /// The words of `text`, in order, repeats included.
    public static func words(_ text: String) -> [String] {
        var words: [String] = []
        forEachWord(in: text) { words.append($0) }
        return words
    }

    public static func forEachWord(in text: String, _ body: (String) -> Void) {
        let folded = fold(text)
        var current: [UInt8] = []
        func flush() {
            if !current.isEmpty {
                body(String(decoding: current, as: UTF8.self))
                current.removeAll(keepingCapacity: true)
            }
        }
        if folded.utf8.allSatisfy({ $0 < 0x80 }) {
            for byte in folded.utf8 {
                if (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) {
                    current.append(byte)
                } else {
                    flush()
                }
            }
            flush()
            return
        }
        for scalar in folded.unicodeScalars {
            if scalar.properties.isAlphabetic || scalar.properties.numericType != nil {
                current.append(contentsOf: String(scalar).utf8)
            } else {
                flush()
            }
        }
        flush()
    }

    /// Lower-cased with accents removed; ASCII, the common case, without Foundation.
    public static func fold(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            guard text.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return text }
            return String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
        }
        return text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).lowercased()
    }
}
