import Contracts

/// The gazetteer's names in other languages (the file's `T` records): of countries,
/// continents, currencies and places, each under a BCP 47 tag.
///
/// The file holds a name under a tag only where the lookup would give another one
/// without it, so a lookup walks the tag's chain (`de-at`, then `de`), for a
/// country, continent or currency then English's, and takes the first name found;
/// nil means the caller's last resort (the English name of the `C` or `N` record, or
/// a place's own name) is the answer.
struct Translations: Sendable {
    enum Kind: UInt8, Sendable {
        case country, continent, currency, place

        /// The record's kind letter in the file.
        init?(letter: UInt8) {
            switch letter {
            case UInt8(ascii: "C"): self = .country
            case UInt8(ascii: "N"): self = .continent
            case UInt8(ascii: "M"): self = .currency
            case UInt8(ascii: "P"): self = .place
            default: return nil
            }
        }
    }

    /// A name and the tag of its language as the data spells it (`zh-Hant`).
    struct Name: Sendable, Equatable {
        let text: String
        let lang: String
    }

    private struct Key: Hashable, Sendable {
        let kind: Kind
        let key: String
        /// Lowercased, as `LanguageTag.lookupChain` gives them.
        let tag: String
    }

    private var names: [Key: Name] = [:]

    var count: Int { names.count }

    /// Makes room for `count` names at once (the file holds ~134,000).
    mutating func reserveCapacity(_ count: Int) { names.reserveCapacity(count) }

    /// `lookupTag` is `tag` lowercased, as `LanguageTag.lookupChain` spells tags.
    mutating func add(_ kind: Kind, key: String, tag: String, lookupTag: String, name: String) {
        names[Key(kind: kind, key: key, tag: lookupTag)] = Name(text: name, lang: tag)
    }

    /// The name along `language`'s chain, else along `fallback`'s.
    func name(_ kind: Kind, _ key: String, in language: LanguageTag, else fallback: LanguageTag? = nil) -> Name? {
        for tag in language.lookupChain + (fallback?.lookupChain ?? []) {
            if let name = names[Key(kind: kind, key: key, tag: tag)] { return name }
        }
        return nil
    }
}
