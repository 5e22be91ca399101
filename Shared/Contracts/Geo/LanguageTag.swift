import Foundation
import Wire

/// A BCP 47 language tag as the `lang` of geo's ops takes it: `de`, `de-CH`,
/// `pt-BR`, `zh-Hant-TW`. Compared without case, as BCP 47 says.
///
/// Names are looked up along the tag, dropping subtags from the end (`de-CH`, then
/// `de`), and then fall back to English (or, for places, to the place's own name).
public struct LanguageTag: Sendable, Hashable, CustomStringConvertible {
    /// The tag lowercased, subtags joined by `-`.
    public let normalized: String

    public static let english = LanguageTag(checked: "en")

    /// Nil unless `text` is a language subtag of 2–8 letters followed by subtags of
    /// 1–8 letters or digits, joined by `-` (or `_`, as POSIX locales write them),
    /// 35 characters at most.
    public init?(_ text: String) {
        guard (2...35).contains(text.utf8.count) else { return nil }
        let subtags = text.lowercased().split(separator: "-", omittingEmptySubsequences: false)
            .flatMap { $0.split(separator: "_", omittingEmptySubsequences: false) }
        guard let language = subtags.first, (2...8).contains(language.utf8.count),
              language.utf8.allSatisfy({ (0x61...0x7A).contains($0) }),
              subtags.dropFirst().allSatisfy({ (1...8).contains($0.utf8.count)
                  && $0.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) } })
        else { return nil }
        normalized = subtags.joined(separator: "-")
    }

    private init(checked: String) { normalized = checked }

    /// This tag and each shorter one made by dropping subtags from the end:
    /// `zh-hant-tw`, `zh-hant`, `zh`.
    public var lookupChain: [String] {
        var chain = [normalized]
        var tag = Substring(normalized)
        while let dash = tag.lastIndex(of: "-") {
            tag = tag[..<dash]
            chain.append(String(tag))
        }
        return chain
    }

    public var description: String { normalized }

    /// The language an HTTP `Accept-Language` header prefers most
    /// (`fr-CH, fr;q=0.9, en;q=0.8` gives `fr-ch`): the valid tag of highest
    /// quality, the first of equals; nil for none (or only `*`).
    public static func preferred(acceptLanguage header: String) -> LanguageTag? {
        var best: (tag: LanguageTag, quality: Double)?
        for item in header.split(separator: ",") {
            let parts = item.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            guard let first = parts.first, let tag = LanguageTag(first) else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() where parameter.lowercased().hasPrefix("q=") {
                quality = Double(parameter.dropFirst(2)) ?? 0
            }
            guard quality > 0, quality <= 1 else { continue }
            if best.map({ quality > $0.quality }) ?? true { best = (tag, quality) }
        }
        return best?.tag
    }

    /// The language of a POSIX locale as `LANG` and `LC_ALL` name it
    /// (`de_AT.UTF-8@euro` gives `de-at`); nil for `C`, `POSIX` and what is no tag.
    public init?(posixLocale locale: String) {
        let name = locale.prefix { $0 != "." && $0 != "@" }
        guard name != "C", name != "POSIX" else { return nil }
        self.init(String(name))
    }
}

extension Check {
    /// An optional `lang`: nil when absent, else the tag.
    public static func languageTag(_ value: String?, field: String = "lang") throws -> LanguageTag? {
        guard let value else { return nil }
        guard let tag = LanguageTag(value) else {
            throw ServiceError.invalidArgument(field: field, "\(field) must be a BCP 47 language tag such as de, de-CH or pt-BR")
        }
        return tag
    }
}
