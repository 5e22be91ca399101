import Foundation
import GRDB
import Synchronization

/// Public profiles as ready-written JSON, by user id: `auth.users.get` is auth's
/// most frequent read (every chat list, every post's contact line) and profiles
/// change rarely, so it answers from memory.
///
/// Coherence: any commit that touches the `user` table clears the cache, and a
/// read that began before such a commit cannot put its result back in (the
/// generation it started from is gone).
final class ProfileCache: Sendable {
    private struct State {
        var profiles: [String: [UInt8]] = [:]
        var generation: UInt64 = 0
    }

    private let state = Mutex(State())
    /// A bound on memory (about 200 bytes a profile); the cache starts over past it.
    static let capacity = 100_000

    /// The cached profiles among `ids`, and the generation to insert misses under.
    func lookup(_ ids: [String]) -> (found: [String: [UInt8]], generation: UInt64) {
        state.withLock { state in
            var found: [String: [UInt8]] = [:]
            for id in ids { if let profile = state.profiles[id] { found[id] = profile } }
            return (found, state.generation)
        }
    }

    /// Keeps profiles read from the database, unless users changed since `generation`.
    func insert(_ profiles: [String: [UInt8]], generation: UInt64) {
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.profiles.count + profiles.count > Self.capacity { state.profiles.removeAll(keepingCapacity: true) }
            state.profiles.merge(profiles) { $1 }
        }
    }

    func invalidate() {
        state.withLock { state in
            state.generation &+= 1
            state.profiles.removeAll(keepingCapacity: true)
        }
    }

    /// Clears the cache after every commit that changed a user.
    func observe(_ writer: some DatabaseWriter) {
        writer.add(transactionObserver: UserChangeObserver(cache: self), extent: .databaseLifetime)
    }
}

/// Runs on the writer's queue, one transaction at a time.
private final class UserChangeObserver: TransactionObserver {
    let cache: ProfileCache
    private var changed = false

    init(cache: ProfileCache) { self.cache = cache }

    func observes(eventsOfKind eventKind: DatabaseEventKind) -> Bool {
        eventKind.tableName == "user"
    }

    func databaseDidChange(with event: DatabaseEvent) { changed = true }

    func databaseDidCommit(_ db: Database) {
        if changed { cache.invalidate() }
        changed = false
    }

    func databaseDidRollback(_ db: Database) { changed = false }
}
