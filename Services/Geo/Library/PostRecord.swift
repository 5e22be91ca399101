/// One post in the index, in 88 bytes plus its runs in the arenas.
///
/// The strings of a post sit back to back in one run of the byte arena: its id,
/// title, folded title (empty when folding changes nothing), tags as JSON and ref.
/// Its word ids (sorted) and then its tag ids (sorted) sit in one run of the word
/// arena.
struct PostRecord: Sendable {
    var lat: Double
    var lon: Double
    /// `GeoRules.cosLatitude(lat)`, kept so that a search's distances need two
    /// sines and an arcsine per post rather than also two cosines.
    var cosLat: Double
    /// Seconds since 1970.
    var createdAt: Double
    /// -1 while unrated, so that "highest first" puts unrated posts last.
    var ratingAverage: Double
    var ratingCount: Int32
    /// Any 2–20 letters are a kind, so there may be more than 65,536 of them.
    var kind: UInt32
    var owner: UInt32
    /// 0 for a post without opening hours.
    var schedule: UInt32
    var strings: ArenaSpan
    var idLength: UInt8
    /// False once the post is deleted or changed (a change gets a new slot). Kept in
    /// the record, in what would be padding, so that a search checks it in the
    /// memory it reads for the coordinates anyway rather than in another array.
    var alive = true
    var titleLength: UInt16
    var foldedLength: UInt16
    var tagsLength: UInt16
    var refLength: UInt16
    var terms: ArenaSpan
    var tagCount: UInt16
    /// True when the id, title and ref need no JSON escapes (nearly always), so a
    /// hit writes them without looking for any.
    var plainStrings: Bool

    var id: ArenaSpan { ArenaSpan(offset: strings.offset, length: UInt32(idLength)) }
    var title: ArenaSpan { ArenaSpan(offset: strings.offset + UInt32(idLength), length: UInt32(titleLength)) }
    /// The title as sorting compares it.
    var sortTitle: ArenaSpan {
        foldedLength == 0 ? title : ArenaSpan(offset: title.offset + UInt32(titleLength), length: UInt32(foldedLength))
    }
    var tagsJSON: ArenaSpan {
        ArenaSpan(offset: title.offset + UInt32(titleLength) + UInt32(foldedLength), length: UInt32(tagsLength))
    }
    /// Empty for a post without a ref.
    var ref: ArenaSpan {
        ArenaSpan(offset: tagsJSON.offset + UInt32(tagsLength), length: UInt32(refLength))
    }
}
