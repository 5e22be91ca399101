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

    /// Calls `body` with each word of `text`, in order.
    public static func forEachWord(in text: String, _ body: (String) -> Void) {
        let joined = key(text)
        var start = 0
        for (index, byte) in joined.enumerated() where byte == 0x20 {
            body(String(decoding: joined[start..<index], as: UTF8.self))
            start = index + 1
        }
        if start < joined.count { body(String(decoding: joined[start...], as: UTF8.self)) }
    }

    /// `text`'s words joined by one space, as UTF-8: `"Café-Bar  Köln"` is `cafe bar koln`.
    /// A place name's search key (`PlaceNames`), made in one pass with no String per
    /// word: geo makes about 450,000 of them at every start.
    static func key(_ text: String) -> [UInt8] {
        var key: [UInt8] = []
        key.reserveCapacity(text.utf8.count)
        // A space stands for a character that is no part of a word; runs of them become
        // one space between words, and none at either end.
        var gap = false
        func take(_ byte: UInt8) {
            if byte == 0x20 {
                gap = true
                return
            }
            if gap, !key.isEmpty { key.append(0x20) }
            gap = false
            key.append(byte)
        }
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            for byte in text.utf8 { take(asciiWordForm(byte)) }
            return key
        }
        for scalar in text.unicodeScalars {
            if scalar.isASCII {
                take(asciiWordForm(UInt8(scalar.value)))
            } else {
                for byte in ScalarFolds.shared.wordForm(scalar) { take(byte) }
            }
        }
        return key
    }

    /// An ASCII character as a word holds it (lower-cased), or a space where it is no
    /// part of a word.
    @inline(__always)
    private static func asciiWordForm(_ byte: UInt8) -> UInt8 {
        switch byte {
        case 0x61...0x7A, 0x30...0x39: byte
        case 0x41...0x5A: byte + 0x20
        default: 0x20
        }
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

    /// A character's folded UTF-8, and the same with a space for each folded character
    /// that is no part of a word.
    private struct Forms: Sendable {
        var folded: [UInt8]
        var word: [UInt8]
    }

    private let known = Mutex<[UInt32: Forms]>([:])

    func fold(_ scalar: Unicode.Scalar) -> [UInt8] { forms(scalar).folded }

    /// What `scalar` adds to a word key (`TextTerms.key`).
    func wordForm(_ scalar: Unicode.Scalar) -> [UInt8] { forms(scalar).word }

    private func forms(_ scalar: Unicode.Scalar) -> Forms {
        if let forms = known.withLock({ $0[scalar.value] }) { return forms }
        let folded: [UInt8]
        if scalar.properties.generalCategory == .nonspacingMark {
            folded = []
        } else {
            let text = String(Character(scalar))
                .folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil).lowercased()
            folded = Array(text.utf8)
        }
        var word: [UInt8] = []
        for part in String(decoding: folded, as: UTF8.self).unicodeScalars {
            if TextTerms.isWordCharacter(part) { UTF8.encode(part) { word.append($0) } } else { word.append(0x20) }
        }
        let forms = Forms(folded: folded, word: word)
        known.withLock { $0[scalar.value] = forms }
        return forms
    }
}
