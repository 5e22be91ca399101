import Contracts
import Foundation
import OpeningHours
import ServiceClient
import ServiceKit
import Wire

/// The in-memory index of every post geo knows: where each is, its words, and what
/// a hit shows.
///
/// Points live in k-d trees over unit vectors. New posts wait in a small unsorted
/// buffer; a full buffer becomes a tree, and trees of similar size merge into one
/// (the logarithmic method), so a stream of changes costs O(log n) rebuilding per
/// post and a search looks at a handful of trees. A changed post gets a new slot;
/// its old slot and a deleted post's are marked dead and skipped, and dropped when
/// their tree is next merged.
///
/// Searches hold the read lock; changes hold the write lock only to publish: trees
/// are built beforehand, off the lock, by the one thread that applies changes.
public final class PostIndex: @unchecked Sendable {
    // Every stored property below is read under `lock` (read or write) and written
    // only under the write lock, by the single thread that applies changes; that
    // thread also reads them without the lock, which is safe as it is the only writer.
    let lock = ReadWriteLock()
    var records: [PostRecord] = []
    var slots = SlotTable()
    var bytes = PostIndex.stringArena()
    var terms = PostIndex.termArena()
    var vocabulary = Vocabulary()
    /// Read by searches (under the read lock, so it locks itself).
    let prefixExpansions = PrefixExpansions()
    var tagIDs: [String: UInt32] = [:]
    var kindIDs: [String: UInt32] = [:]
    var kindNames: [String] = []
    var ownerIDs: [String: UInt32] = [:]
    var ownerNames: [String] = []
    var scheduleIDs: [ScheduleKey: UInt32] = [:]
    /// Hours that depend on the place, parsed once: their schedules are kept per
    /// point and share one parsed value.
    var placeBoundHours: [String: OpeningHours] = [:]
    /// The countries of those points, for holidays.
    let schedulePlaces = SchedulePlaces()
    /// Index 0 stands for "no hours".
    var schedules: [Schedule?] = [nil]
    var trees: [KDTree] = []
    /// Slots not in any tree yet.
    var pending: [Int32] = []
    var liveCount = 0
    /// Where in catalogue's feed the index stands: the seq of the last change it
    /// holds (0 before any). A snapshot carries it, so a start knows which rows of
    /// geo's file changed after it (`GeoStore.changes(after:)`).
    var feedPosition: Int64 = 0

    /// A buffer this full becomes a tree.
    static let bufferSize = 512

    struct ScheduleKey: Hashable {
        var hours: String
        var timezone: String
        /// `lat,lon` rounded (`SchedulePlaces.rounded`) for hours that depend on the
        /// place (`PH`, `SH`, the sun); empty for the rest, which every post shares.
        var point: String = ""
    }

    struct Schedule: Sendable {
        var hours: OpeningHours
        var timeZone: TimeZone
        /// The rounded point, for hours that depend on the place.
        var point: (lat: Double, lon: Double)?
    }

    public init() {}

    /// Live posts.
    public var count: Int { lock.withReadLock { liveCount } }

    /// Adds the posts `fill` hands over (at start-up) and makes one tree of them.
    ///
    /// `fill` runs on the calling thread and each post's words are split there;
    /// another thread indexes them meanwhile, so start-up takes about the longer of
    /// the two rather than their sum. `expectedCount` sizes the id table.
    func load(expectedCount: Int, _ fill: ((IndexedPost) -> Void) throws -> Void) rethrows {
        let pipe = BatchPipe<PreparedPost>(capacity: 16)
        let indexer = ServiceThread(name: "geo-load") { [self] in
            lock.withWriteLock {
                records.reserveCapacity(expectedCount)
                slots.reserve(expectedCount, idOf: { self.records[Int($0)].id }, bytes: bytes)
                while let batch = pipe.next() {
                    for post in batch { insertRecord(post) }
                }
                let points = pending.map { Self.treePoint(records[Int($0)], slot: $0, terms: terms) }
                pending.removeAll()
                if !points.isEmpty {
                    trees.append(Self.layOut(records: &records, bytes: &bytes, terms: &terms, slots: &slots, vocabulary: &vocabulary,
                                             along: KDTree(points: points)))
                }
            }
        }
        var batch: [PreparedPost] = []
        batch.reserveCapacity(Self.loadBatch)
        // Whether `fill` finishes or throws, the indexer gets the rest and ends.
        defer {
            if !batch.isEmpty { pipe.send(batch) }
            pipe.finish()
            indexer.join()
        }
        try fill { post in
            batch.append(PreparedPost(post))
            if batch.count == Self.loadBatch {
                pipe.send(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
    }

    private static let loadBatch = 2048

    enum Change: Sendable {
        case upsert(IndexedPost)
        case delete(String)
    }

    /// A post's slot before and after one change: nil before for a new post, nil
    /// after for a deleted one (or a delete of a post never seen).
    struct Transition: Sendable {
        var before: Int32?
        var after: Int32?
    }

    /// Applies changes in order (a later one for the same id wins). `applied` gets
    /// each change's transition once the searches see them, before anything moves a
    /// record: the old slots are still there to read (on this thread, the only writer).
    func apply(_ changes: [Change], through seq: Int64? = nil, applied: (([Transition]) -> Void)? = nil) {
        var transitions: [Transition] = []
        if applied != nil { transitions.reserveCapacity(changes.count) }
        lock.withWriteLock {
            if let seq { feedPosition = max(feedPosition, seq) }
            for change in changes {
                let transition: Transition
                switch change {
                case .upsert(let post):
                    let (replaced, slot) = insertRecord(PreparedPost(post))
                    transition = Transition(before: replaced, after: slot)
                case .delete(let id):
                    let old = slots.remove(id, idOf: { records[Int($0)].id }, bytes: bytes)
                    if let old { kill(old) }
                    transition = Transition(before: old, after: nil)
                }
                if applied != nil { transitions.append(transition) }
            }
        }
        applied?(transitions)
        if pending.count >= Self.bufferSize { flushPending() }
        let dead = records.count - liveCount
        if dead >= Self.compactionMinimum, dead >= liveCount { compact() }
    }

    /// Dead slots that make compacting worth its copy: below this, they cost less
    /// than a megabyte.
    static let compactionMinimum = 4096

    /// Copies the live records, their strings, words and ids into fresh storage and
    /// makes one tree of them, laid out in its order (`layOut`, which also makes the
    /// fresh arenas).
    /// Built off the lock, as `flushPending` is: this thread is the only writer, so
    /// it reads its own state safely; searches go on meanwhile and see the swap whole.
    /// Costs a pass over the records once dead ones outnumber live ones: O(1) per change.
    func compact() {
        // The live records, still pointing into the current arenas until `layOut`.
        var newRecords: [PostRecord] = []
        newRecords.reserveCapacity(liveCount)
        var newVocabulary = vocabulary
        newVocabulary.removePostings()
        for slot in records.indices where records[slot].alive {
            let record = records[slot]
            let newSlot = Int32(newRecords.count)
            let wordCount = Int(record.terms.length) - Int(record.tagCount)
            terms.withElements(record.terms) { ids in
                for word in ids.prefix(wordCount) { newVocabulary.post(newSlot, to: word) }
            }
            newRecords.append(record)
        }
        var newSlots = SlotTable()
        newSlots.reserve(newRecords.count, idOf: { newRecords[Int($0)].id }, bytes: bytes)
        for slot in newRecords.indices {
            newSlots.set(bytes.string(newRecords[slot].id), slot: Int32(slot), idOf: { newRecords[Int($0)].id }, bytes: bytes)
        }
        let points = newRecords.indices.map { Self.treePoint(newRecords[$0], slot: Int32($0), terms: terms) }
        // `layOut` swaps these for fresh arenas holding only the live posts'.
        var newBytes = points.isEmpty ? Self.stringArena() : bytes
        var newTerms = points.isEmpty ? Self.termArena() : terms
        let tree = points.isEmpty ? nil
            : Self.layOut(records: &newRecords, bytes: &newBytes, terms: &newTerms, slots: &newSlots, vocabulary: &newVocabulary,
                          along: KDTree(points: points))
        lock.withWriteLock {
            records = newRecords
            bytes = newBytes
            terms = newTerms
            vocabulary = newVocabulary
            slots = newSlots
            trees = tree.map { [$0] } ?? []
            pending.removeAll()
        }
        FreedMemory.giveBack()
    }

    /// Puts the records in the order of `tree`'s points (which must hold every record
    /// once), copies their strings and word ids into fresh arenas in the same order,
    /// and renumbers everything that names a slot; returns the tree with its points
    /// numbered by position. Posts near each other in space then sit near each other
    /// in memory, so a search reads a leaf's records, their words and a hit's strings
    /// from a few neighbouring cache lines instead of taking a cache miss on each.
    /// Posts added later go on at the end until a compaction lays everything out again.
    static func layOut(records: inout [PostRecord], bytes: inout Arena<UInt8>, terms: inout Arena<UInt32>,
                       slots: inout SlotTable, vocabulary: inout Vocabulary, along tree: KDTree) -> KDTree {
        guard tree.count == records.count else { return tree }
        var newSlot = [Int32](repeating: 0, count: records.count)
        for (position, point) in tree.points.enumerated() { newSlot[Int(point.slot)] = Int32(position) }
        // Half the work on a second thread (start-up waits for all of it, and it is
        // mostly cache misses): the id table, the postings and the word ids there;
        // the records and their strings here. The table and postings are moved into
        // the box, so that each is changed in place rather than copied.
        let side = MovedValue(LayoutSide(slots: slots, vocabulary: vocabulary))
        slots = SlotTable()
        vocabulary = Vocabulary()
        let oldRecords = records, oldTerms = terms, order = tree.points
        let helper = ServiceThread(name: "geo-layout") { [newSlot] in
            side.value.slots.renumber { newSlot[Int($0)] }
            side.value.vocabulary.renumberPostings { newSlot[Int($0)] }
            // Built in locals and stored once: each access to the box's property is
            // checked for exclusivity at run time, too often for a loop over every post.
            var terms = Self.termArena()
            var spans: [ArenaSpan] = []
            spans.reserveCapacity(order.count)
            for point in order {
                let span = oldRecords[Int(point.slot)].terms
                spans.append(oldTerms.withElements(span) { terms.append($0) })
            }
            side.value.terms = terms
            side.value.termSpans = spans
        }
        // Records first, then their strings: two simple passes whose loads do not
        // wait on each other, instead of one whose string load waits on its record's.
        records = order.map { oldRecords[Int($0.slot)] }
        var newBytes = Self.stringArena()
        for index in records.indices {
            records[index].strings = bytes.withElements(records[index].strings) { newBytes.append($0) }
        }
        bytes = newBytes
        let numbered = tree.numberedByPosition()
        helper.join()
        for index in records.indices { records[index].terms = side.value.termSpans[index] }
        terms = side.value.terms
        slots = side.value.slots
        vocabulary = side.value.vocabulary
        return numbered
    }

    /// Posts' strings (ids, titles, texts): chunks of 1 MiB.
    static func stringArena() -> Arena<UInt8> { Arena(chunkShift: 20) }

    /// Posts' word and tag ids: chunks of 256 Ki ids.
    static func termArena() -> Arena<UInt32> { Arena(chunkShift: 18) }

    /// What `layOut` works out on its second thread.
    private struct LayoutSide {
        var slots: SlotTable
        var vocabulary: Vocabulary
        var terms = PostIndex.termArena()
        var termSpans: [ArenaSpan] = []
    }

    /// Turns the buffer into a tree, merging trees of similar size; built off the
    /// lock, published under it.
    func flushPending() {
        let moving = pending
        var merged = moving.compactMap { slot -> TreePoint? in
            records[Int(slot)].alive ? Self.treePoint(records[Int(slot)], slot: slot, terms: terms) : nil
        }
        var keep = trees
        while let last = keep.last, last.count <= merged.count * 2 {
            merged.append(contentsOf: last.points.lazy.filter { self.records[Int($0.slot)].alive })
            keep.removeLast()
        }
        if !merged.isEmpty { keep.append(KDTree(points: merged)) }
        lock.withWriteLock {
            trees = keep
            pending.removeFirst(moving.count)
        }
        // A large merge freed the trees it replaced; during an import their memory
        // would otherwise stay with the process (475 MB after 1M posts, 421 MB with this).
        if merged.count >= Self.largeMerge { FreedMemory.giveBack() }
    }

    /// A merge of this many points or more gives its freed memory back.
    static let largeMerge = 65_536

    /// A post's point in the trees, with the signature of its words.
    static func treePoint(_ record: PostRecord, slot: Int32, terms: Arena<UInt32>) -> TreePoint {
        let wordCount = Int(record.terms.length) - Int(record.tagCount)
        let words = terms.withElements(record.terms) { WordSignature.of($0.prefix(wordCount)) }
        return TreePoint(UnitVector(lat: record.lat, lon: record.lon), slot: slot, words: words)
    }

    /// An estimate of the memory the index holds.
    public var memoryBytes: Int {
        lock.withReadLock {
            var total = records.capacity * MemoryLayout<PostRecord>.stride + slots.memoryBytes
            total += bytes.capacity + terms.capacity * 4 + vocabulary.memoryBytes
            total += trees.reduce(0) { $0 + $1.points.count * MemoryLayout<TreePoint>.stride + $1.nodes.count * MemoryLayout<KDTree.Node>.stride }
            return total
        }
    }

    // MARK: Writing records (under the write lock)

    private func kill(_ slot: Int32) {
        if records[Int(slot)].alive {
            records[Int(slot)].alive = false
            liveCount -= 1
        }
    }

    /// What can be worked out from a post alone, on any thread: its words and
    /// the forms of its title and tags a record keeps.
    struct PreparedPost: Sendable {
        var post: IndexedPost
        var foldedTitle: String
        var tagsJSON: [UInt8]
        /// The words of its title, text, category and tags, repeats included.
        var words: [String]

        init(_ post: IndexedPost) {
            self.post = post
            foldedTitle = TextTerms.fold(post.title)
            var tagsWriter = JSONWriter(capacity: 64)
            tagsWriter.write(post.tags)
            tagsJSON = tagsWriter.bytes
            var words: [String] = []
            for field in [post.title, post.text, post.category ?? ""] + post.tags {
                TextTerms.forEachWord(in: field) { words.append($0) }
            }
            self.words = words
        }
    }

    /// Adds a post's record; the slot of the record it replaces (now dead), and its own.
    @discardableResult
    private func insertRecord(_ prepared: PreparedPost) -> (replaced: Int32?, slot: Int32) {
        let post = prepared.post
        let slot = Int32(records.count)
        let idLength = post.id.utf8.count, titleLength = post.title.utf8.count, refLength = post.ref?.utf8.count ?? 0
        var strings: [UInt8] = []
        strings.append(contentsOf: post.id.utf8)
        strings.append(contentsOf: post.title.utf8)
        let foldedLength = prepared.foldedTitle == post.title ? 0 : prepared.foldedTitle.utf8.count
        if foldedLength > 0 { strings.append(contentsOf: prepared.foldedTitle.utf8) }
        strings.append(contentsOf: prepared.tagsJSON)
        if let ref = post.ref { strings.append(contentsOf: ref.utf8) }
        // The id and title lead the run and the ref ends it.
        let plain = strings.withUnsafeBufferPointer {
            !JSONWriter.needsEscaping(UnsafeBufferPointer(rebasing: $0[..<(idLength + titleLength)]))
                && !JSONWriter.needsEscaping(UnsafeBufferPointer(rebasing: $0[($0.count - refLength)...]))
        }

        // A post has a handful of words: sorting an array and dropping repeats costs
        // less than hashing them into a set (a tenth of start-up's indexing time).
        let sortedWords = Self.sortedUnique(prepared.words.map { vocabulary.intern($0) })
        let sortedTags = Self.sortedUnique(post.tags.map { internTag($0) })
        for word in sortedWords { vocabulary.post(slot, to: word) }

        let record = PostRecord(
            lat: post.lat, lon: post.lon, cosLat: GeoRules.cosLatitude(post.lat), createdAt: post.createdAt.timeIntervalSince1970,
            ratingAverage: post.rating.average ?? -1, ratingCount: Int32(clamping: post.rating.count),
            kind: internKind(post.kind), owner: internOwner(post.ownerId), schedule: internSchedule(post.hours, post.timezone, lat: post.lat, lon: post.lon),
            strings: bytes.append(strings), idLength: UInt8(idLength), titleLength: UInt16(titleLength),
            foldedLength: UInt16(foldedLength), tagsLength: UInt16(prepared.tagsJSON.count),
            refLength: UInt16(refLength), terms: terms.append(sortedWords + sortedTags),
            tagCount: UInt16(sortedTags.count),
            plainStrings: plain)
        records.append(record)
        liveCount += 1
        let replaced = slots.set(post.id, slot: slot, idOf: { records[Int($0)].id }, bytes: bytes)
        if let replaced { kill(replaced) }
        pending.append(slot)
        return (replaced, slot)
    }

    static func tagKey(_ tag: String) -> String { TextTerms.fold(tag) }

    /// `ids` ascending, each once.
    static func sortedUnique(_ ids: [UInt32]) -> [UInt32] {
        guard ids.count > 1 else { return ids }
        var ids = ids
        ids.sort()
        var kept = 1
        for index in 1..<ids.count where ids[index] != ids[kept - 1] {
            ids[kept] = ids[index]
            kept += 1
        }
        ids.removeLast(ids.count - kept)
        return ids
    }

    private func internTag(_ tag: String) -> UInt32 {
        let key = Self.tagKey(tag)
        if let id = tagIDs[key] { return id }
        let id = UInt32(tagIDs.count)
        tagIDs[key] = id
        return id
    }

    private func internKind(_ kind: String) -> UInt32 {
        if let id = kindIDs[kind] { return id }
        let id = UInt32(kindNames.count)
        kindIDs[kind] = id
        kindNames.append(kind)
        return id
    }

    private func internOwner(_ owner: String) -> UInt32 {
        if let id = ownerIDs[owner] { return id }
        let id = UInt32(ownerNames.count)
        ownerIDs[owner] = id
        ownerNames.append(owner)
        return id
    }

    private func internSchedule(_ hours: String?, _ timezone: String?, lat: Double, lon: Double) -> UInt32 {
        // Catalogue only publishes hours it parsed with a valid time zone; anything
        // else is treated as "no hours" rather than guessed at.
        guard let hours, let timezone else { return 0 }
        let point = (lat: SchedulePlaces.rounded(lat), lon: SchedulePlaces.rounded(lon))
        var key = ScheduleKey(hours: hours, timezone: timezone)
        let placeBound = placeBoundHours[hours]
        if placeBound != nil { key.point = "\(point.lat),\(point.lon)" }
        if let id = scheduleIDs[key] { return id }
        guard let parsed = placeBound ?? (try? OpeningHours(parsing: hours)), let zone = TimeZoneNames.timeZone(named: timezone) else {
            return 0
        }
        if parsed.needsPlace, key.point.isEmpty {
            placeBoundHours[hours] = parsed
            key.point = "\(point.lat),\(point.lon)"
            if let id = scheduleIDs[key] { return id }
        }
        let id = UInt32(schedules.count)
        schedules.append(Schedule(hours: parsed, timeZone: zone, point: parsed.needsPlace ? point : nil))
        scheduleIDs[key] = id
        return id
    }

    /// Where a schedule's hours are judged: its point and country, or nowhere in particular.
    func place(of schedule: Schedule) -> OpeningHoursPlace {
        guard let point = schedule.point else { return .unknown }
        return schedulePlaces.place(lat: point.lat, lon: point.lon)
    }
}

/// A value handed to one other thread, which changes it in place while the owner
/// waits to take it back (after joining that thread, so the two never touch it at once).
private final class MovedValue<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
