import Contracts

/// The gazetteer's names in other languages (the file's `T` records): of countries,
/// continents, currencies and places, each under a BCP 47 tag.
///
/// The file holds a name under a tag only where the lookup would give another one
/// without it, so a lookup walks the tag's chain (`de-at`, then `de`), for a
/// country, continent or currency then English's, and takes the first name found;
/// nil means the caller's last resort (the English name of the `C` or `N` record, or
/// a place's own name) is the answer.
///
/// About 235,000 names, kept as one byte buffer and a sorted list of 16-byte entries
/// (kind, key and tag as small numbers): as a dictionary of strings they took 60 MB of
/// geo's memory, a dictionary of 72-byte entries sized for twice their number and a
/// string allocation for every longer name.
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

    private struct Entry: Sendable {
        /// Kind, key and lookup tag in one number (`pack`), the order entries sort in.
        var packed: UInt64
        var offset: UInt32
        var length: UInt16
        /// The tag as the data spells it, in `writtenTags`.
        var writtenTag: UInt16
    }

    private var entries: [Entry] = []
    private var bytes: [UInt8] = []
    /// Each key (a country, continent or currency code, a place's id) and each
    /// lowercased lookup tag, by number.
    private var keys: [String: UInt32] = [:]
    private var lookupTags: [String: UInt16] = [:]
    private var writtenTags: [String] = []
    private var writtenTagNumbers: [String: UInt16] = [:]
    /// Whether `entries` is sorted and holds one entry per kind, key and tag.
    private var sealed = true

    /// Makes room for `count` names at once (the file holds ~235,000).
    mutating func reserveCapacity(_ count: Int) {
        entries.reserveCapacity(count)
        bytes.reserveCapacity(count * 12)
    }

    /// A language tag's numbers: as look-ups spell it and as the data writes it.
    struct Tag: Sendable {
        fileprivate let lookup: UInt16
        fileprivate let written: UInt16
    }

    /// Numbers `tag` once, for every name under it: `lookupTag` is `tag` lowercased, as
    /// `LanguageTag.lookupChain` spells tags. Nil past 65,535 tags (the shipped file
    /// has a few hundred): names under such a tag are left out rather than trapping.
    mutating func tag(_ tag: String, lookupTag: String) -> Tag? {
        guard lookupTags.count < Int(UInt16.max), writtenTags.count < Int(UInt16.max) else { return nil }
        let lookup = lookupTags[lookupTag] ?? { let number = UInt16(lookupTags.count); lookupTags[lookupTag] = number; return number }()
        let written = writtenTagNumbers[tag] ?? {
            let number = UInt16(writtenTags.count)
            writtenTags.append(tag)
            writtenTagNumbers[tag] = number
            return number
        }()
        return Tag(lookup: lookup, written: written)
    }

    /// Adds a name, and gives its key's number (`keyNumber`), or nil when the name is
    /// left out. A second name under the same kind, key and tag replaces the first.
    @discardableResult
    mutating func add(_ kind: Kind, key: String, tag: Tag, name: String) -> Int? {
        let utf8 = name.utf8
        // Bounds far past the shipped file's (35,000 keys, 3 MB of names): a file beyond
        // them loses the names past them rather than trapping.
        guard utf8.count <= Int(UInt16.max), bytes.count + utf8.count <= Int(UInt32.max), keys.count < Int(UInt32.max) else {
            return nil
        }
        let keyNumber = keys[key] ?? { let number = UInt32(keys.count); keys[key] = number; return number }()
        entries.append(Entry(packed: Self.pack(kind, keyNumber, tag.lookup), offset: UInt32(bytes.count),
                             length: UInt16(utf8.count), writtenTag: tag.written))
        bytes.append(contentsOf: utf8)
        sealed = false
        return Int(keyNumber)
    }

    /// The number `add` gave `key`; nil for a key with no name.
    func keyNumber(_ key: String) -> Int? { keys[key].map(Int.init) }

    /// Sorts the entries for look-ups, the later of two names for the same kind, key
    /// and tag kept; called once all are added.
    mutating func seal() {
        guard !sealed else { return }
        // A later name lies later in `bytes`: offsets order the ties.
        entries.sort { ($0.packed, $0.offset) < ($1.packed, $1.offset) }
        var kept: [Entry] = []
        kept.reserveCapacity(entries.count)
        for entry in entries {
            if kept.last?.packed == entry.packed { kept[kept.count - 1] = entry } else { kept.append(entry) }
        }
        entries = kept
        sealed = true
    }

    /// The name along `language`'s chain, else along `fallback`'s.
    func name(_ kind: Kind, _ key: String, in language: LanguageTag, else fallback: LanguageTag? = nil) -> Name? {
        precondition(sealed, "Translations are looked up once sealed")
        guard let keyNumber = keys[key] else { return nil }
        for tag in language.lookupChain + (fallback?.lookupChain ?? []) {
            guard let tagNumber = lookupTags[tag], let entry = entry(Self.pack(kind, keyNumber, tagNumber)) else { continue }
            let start = Int(entry.offset)
            return Name(text: String(decoding: bytes[start..<start + Int(entry.length)], as: UTF8.self),
                        lang: writtenTags[Int(entry.writtenTag)])
        }
        return nil
    }

    private func entry(_ packed: UInt64) -> Entry? {
        var low = 0, high = entries.count
        while low < high {
            let mid = (low + high) / 2
            if entries[mid].packed < packed { low = mid + 1 } else { high = mid }
        }
        return low < entries.count && entries[low].packed == packed ? entries[low] : nil
    }

    private static func pack(_ kind: Kind, _ key: UInt32, _ tag: UInt16) -> UInt64 {
        UInt64(kind.rawValue) << 48 | UInt64(key) << 16 | UInt64(tag)
    }
}
