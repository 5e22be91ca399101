import Foundation
import Logging
import ServiceKit
import Synchronization
import Wire

/// Keeps the index's snapshot (`IndexSnapshot`) beside geo's file, and starts from
/// it. A snapshot is written at each clean stop and, while geo runs, whenever enough
/// has changed since the last (checked each minute), so that even after a crash a
/// start reads the snapshot and then only the rows that changed after it
/// (`GeoStore.changes(after:)`), not every post.
///
/// A snapshot is used only by the database it names (`GeoStore.snapshotStamp`), and
/// only when that database stands at or past the snapshot's feed position: a copy
/// put back from an older backup stands before it, and is read whole.
final class SnapshotKeeper: Sendable {
    private let path: String
    private let store: GeoStore
    private let index: PostIndex
    private let logger: Logger
    /// The feed position of the last snapshot written or read, and when.
    private let last: Mutex<(position: Int64, at: Date)>
    /// Changes since the last snapshot that make a new one worth its write (about a
    /// second for a million posts, holding off changes meanwhile).
    private let changesWorthASnapshot: Int64
    /// Any change at all is written after this long.
    static let longest: TimeInterval = 600

    /// The index from the snapshot, brought up to the file's state, and how many
    /// posts changed or went after the snapshot; nil when there is none that can be
    /// used, or when so much changed after it that reading every post is quicker. A
    /// snapshot that cannot be used is removed.
    static func start(path: String, store: GeoStore, logger: Logger) -> (index: PostIndex, changes: Int)? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        do {
            let index = try PostIndex.readSnapshot(from: path, id: try store.snapshotStamp())
            let position = try store.feedPosition()
            guard index.feedPosition <= position else {
                throw IndexSnapshot.Unreadable(description: "it is ahead of the database (a backup put back?)")
            }
            let changed = try store.changeCount(after: index.feedPosition)
            // Applying changes one by one costs more than a bulk load past about a
            // tenth of the posts.
            guard changed <= max(10_000, index.count / 10) else {
                logger.info("the index snapshot is far behind the database: reading every post",
                            metadata: ["changes": "\(changed)"])
                return nil
            }
            index.apply(try store.changes(after: index.feedPosition), through: position)
            logger.info("index snapshot read", metadata: ["changes after it": "\(changed)"])
            return (index, changed)
        } catch {
            unlink(path)
            logger.warning("the index snapshot was not used: reading every post", metadata: ["why": "\(error)"])
            return nil
        }
    }

    init(path: String, store: GeoStore, index: PostIndex, logger: Logger, changesWorthASnapshot: Int64 = 10_000) {
        self.changesWorthASnapshot = changesWorthASnapshot
        self.path = path
        self.store = store
        self.index = index
        self.logger = logger
        last = Mutex((index.lock.withReadLock { index.feedPosition }, Date()))
    }

    /// Writes a snapshot when enough changed since the last, or anything a while ago.
    func writeIfDue() {
        let position = index.lock.withReadLock { index.feedPosition }
        let due = last.withLock { last in
            let changes = position - last.position
            return changes >= changesWorthASnapshot || (changes > 0 && Date().timeIntervalSince(last.at) >= Self.longest)
        }
        if due { write() }
    }

    /// Writes the index as it stands; the deletions it now holds are forgotten.
    func write() {
        let started = Date()
        do {
            let position = try index.writeSnapshot(to: path, id: try store.snapshotStamp())
            last.withLock { $0 = (position, started) }
            try store.forgetGone(through: position)
            logger.info("index snapshot written", metadata: ["path": "\(path)", "feed position": "\(position)",
                                                             "seconds": "\((Date().timeIntervalSince(started) * 100).rounded() / 100)"])
        } catch {
            logger.warning("could not write the index snapshot; a start after a crash reads every post",
                           metadata: ["error": "\(error)"])
        }
    }
}
