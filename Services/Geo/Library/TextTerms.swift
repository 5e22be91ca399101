import Foundation
import Synchronization

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
            if isWordCharacter(scalar) {
                UTF8.encode(scalar) { current.append($0) }
            } else {
                flush()
            }
        }
        flush()
    }

    /// Lower-cased with accents removed; ASCII, the common case, without Foundation.
    ///
    /// Other characters fold one by one (a combining accent on its own folds to
    /// nothing), each as Foundation folds it, remembered: geo folds a million titles
    /// and 300,000 place names at start, from a few thousand distinct characters.
    public static func fold(_ text: String) -> String {
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            guard text.utf8.contains(where: { $0 >= 0x41 && $0 <= 0x5A }) else { return text }
            return String(decoding: text.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
        }
        var folded: [UInt8] = []
        folded.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            if scalar.isASCII {
                let byte = UInt8(scalar.value)
                folded.append(byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte)
            } else {
                folded.append(contentsOf: ScalarFolds.shared.fold(scalar))
            }
        }
        return String(decoding: folded, as: UTF8.self)
    }

    /// One character of `fold`: what `scalar` folds to, as UTF-8 (nothing for a
    /// combining accent). `fold(text)` is these, scalar by scalar, end to end.
    static func fold(_ scalar: Unicode.Scalar) -> [UInt8] {
        guard scalar.isASCII else { return ScalarFolds.shared.fold(scalar) }
        let byte = UInt8(scalar.value)
        return [byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte]
    }

    /// Whether a folded character belongs to a word (a letter or a digit).
    @inline(__always)
    static func isWordCharacter(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII {
            let byte = UInt8(scalar.value)
            return (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A)
        }
        return scalar.properties.isAlphabetic || scalar.properties.numericType != nil
    }
}

/// What each non-ASCII character folds to, learned as they are met.
private final class ScalarFolds: Sendable {
    static let shared = ScalarFolds()
    private let known = Mutex<[UInt32: [UInt8]]>([:])

    func fold(_ scalar: Unicode.Scalar) -> [UInt8] {
        if let bytes = known.withLock({ $0[scalar.value] }) { return bytes }
        let bytes: [UInt8]
        if scalar.properties.generalCategory == .nonspacingMark {
            bytes = []
        } else {
            let folded = String(Character(scalar))
                .folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).lowercased()
            bytes = Array(folded.utf8)
        }
        known.withLock { $0[scalar.value] = bytes }
        return bytes
    }
}
