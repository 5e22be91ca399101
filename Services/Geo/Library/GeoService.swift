import Contracts
import Foundation
import GRDB
import Logging
import ServiceKit
import Synchronization
import Wire

/// The geo service: follows `catalogue.changes` (posts) and `auth.changes`
/// (discoverable homes) into `<data dir>/geo.sqlite` and in-memory indexes, and
/// answers searches from the indexes.
public final class GeoService: AssembledService {
    public let assembly: ServiceAssembly
    public let index: PostIndex
    let store: GeoStore
    public let users: UserIndex
    public let fences: FenceIndex
    let watches: WatchRegistry
    let postFollower: ChangeFollower<PostChange>
    let userFollower: ChangeFollower<UserChange>
    /// Whether the index came from its last snapshot (and the rows changed after
    /// it), not from reading every post in the database.
    public let startedFromSnapshot: Bool
    /// How many posts changed or went after that snapshot (read from the file).
    let changesAfterSnapshot: Int
    private let snapshots: SnapshotKeeper
    private let stopped = Atomic<Bool>(false)

    public var settings: ServiceSettings { assembly.settings }

    public init(settings: ServiceSettings, logger: Logger) throws {
        let base = try ServiceBase(settings: settings, logger: logger) { GeoSchema.register(in: &$0) }
        let store = GeoStore(database: base.database)
        let gazetteerFile = try Gazetteer.defaultFile(environment: settings.environment)
        let gazetteerLoad = BackgroundLoad(name: "gazetteer") {
            let started = Date()
            let gazetteer = try Gazetteer.shared(from: gazetteerFile)
            logger.info("gazetteer ready", metadata: ["places": "\(gazetteer.places.count)", "file": "\(gazetteerFile.path)",
                                                      "seconds": "\(Self.seconds(since: started))"])
            return gazetteer
        }
        let started = Date()
        let fences = FenceIndex()
        let snapshotPath = IndexSnapshot.path(forDatabase: settings.databasePath)
        let index: PostIndex
        if let snapshot = SnapshotKeeper.start(path: snapshotPath, store: store, logger: logger) {
            index = snapshot.index
            startedFromSnapshot = true
            changesAfterSnapshot = snapshot.changes
            fences.apply(try store.fencePosts().map { .upsert($0) })
        } else {
            startedFromSnapshot = false
            changesAfterSnapshot = 0
            index = PostIndex()
            index.feedPosition = try store.feedPosition()
            var fencePosts: [PostIndex.Change] = []
            try index.load(expectedCount: try store.postCount()) { add in
                try store.forEachPost { post in
                    if post.notifyRadius != nil { fencePosts.append(.upsert(post)) }
                    add(post)
                }
            }
            fences.apply(fencePosts)
        }
        logger.info("geo index ready", metadata: ["posts": "\(index.count)", "from": "\(startedFromSnapshot ? "snapshot" : "database")",
                                                  "seconds": "\(Self.seconds(since: started))"])

        let gazetteer = try gazetteerLoad.value()
        // Holidays of hours that say PH or SH follow the country (and state) the
        // gazetteer puts the post in: its nearest place's.
        index.schedulePlaces.setResolver { lat, lon in
            gazetteer.nearest(lat: lat, lon: lon).map { ($0.place.countryCode, $0.place.admin1) }
        }
        // Loading left freed batches and strings in the loading threads' malloc arenas:
        // give those pages back, or they count against geo for as long as it runs.
        FreedMemory.giveBack()
        let users = UserIndex()
        users.apply(try store.homes().map { .set($0) })
        let verifier = try TokenVerifier.forService(settings)
        let events = EventChannel(policy: SubscriptionPolicy(userTopicPrefixes: [GeoAPI.fenceTopicPrefix, GeoAPI.watchTopicPrefix],
                                                             verifier: verifier),
                                  logger: logger)
        let fenceEvents = FenceEvents(channel: events)
        let watches = WatchRegistry(maxWatches: settings.environment["GEO_MAX_WATCHES"].flatMap(Int.init) ?? GeoRules.maxWatches) {
            owner, json in events.publish(topic: GeoAPI.watchTopic(userId: owner), json: json)
        }

        let postFollower = try base.followPosts(held: store.heldPostIds) { changes, db in
            let applied = try store.apply(changes, wasFence: fences.contains, in: db)
            // The indexes show a change once it is committed, never before.
            db.afterNextTransaction { _ in
                index.apply(applied.changes, through: changes.last?.seq) { transitions in
                    watches.evaluate { index.watchEvents(transitions, watches: &$0, at: Date()) }
                }
                fences.apply(applied.changes)
                let now = Date()
                for (userId, postId) in applied.fencesLeft {
                    fenceEvents.send(.exited, userId: userId, postIds: [postId], at: now)
                }
            }
        }
        let userFollower = try base.followUsers(held: store.heldUserIds) { changes, db in
            let applied = try store.apply(changes, in: db)
            db.afterNextTransaction { _ in
                let touched = users.apply(applied)
                watches.evaluate { users.watchEvents(touching: touched, watches: &$0) }
            }
        }
        var router = Router(service: GeoAPI.service)
        GeoHandlers(index: index, users: users, gazetteer: gazetteer, fences: fences, store: store, fenceEvents: fenceEvents,
                    watches: watches, replica: settings.replica) {
            GeoStats(posts: index.count, users: users.count,
                     lag: [CatalogueAPI.service: try postFollower.lag(), AuthAPI.service: try userFollower.lag()],
                     memoryBytes: index.memoryBytes, watches: watches.count)
        }.register(into: &router)

        self.store = store
        let snapshots = SnapshotKeeper(path: snapshotPath, store: store, index: index, logger: logger)
        self.snapshots = snapshots
        self.index = index
        self.fences = fences
        self.watches = watches
        self.postFollower = postFollower
        self.users = users
        self.userFollower = userFollower
        assembly = try ServiceAssembly(
            base, service: GeoAPI.service, router: router, followers: [postFollower, userFollower], publishing: .events(events),
            frontThreads: try Self.searchThreads(settings.environment), rateLimited: false, verifier: verifier,
            housekeeping: [.init(name: "watch-leases", every: 1) { watches.expire() },
                           .init(name: "index-snapshot", every: 60) { snapshots.writeIfDue() },
                           // Opening hours turn at whole minutes: a few seconds late at most.
                           .init(name: "watch-clock", every: 2) {
                               watches.tick { from, to, state in
                                   index.lock.withReadLock { index.openingEvents(from: from, to: to, watches: &state) }
                               }
                           }])
    }

    /// Threads answering searches (`HEREABOUTS_GEO_SEARCH_THREADS`, else one per
    /// core): searches hold the index's read lock only, so they run side by side.
    static func searchThreads(_ environment: [String: String]) throws -> Int {
        guard let text = environment["HEREABOUTS_GEO_SEARCH_THREADS"], !text.isEmpty else {
            return ProcessInfo.processInfo.activeProcessorCount
        }
        guard let count = Int(text), (1...256).contains(count) else {
            throw ServiceError.invalidArgument(field: "HEREABOUTS_GEO_SEARCH_THREADS", "must be a number from 1 to 256, not \(text)")
        }
        return count
    }

    /// Seconds since `start`, to the hundredth, for the log.
    private static func seconds(since start: Date) -> Double {
        (Date().timeIntervalSince(start) * 100).rounded() / 100
    }

    /// Stops, then writes the index's snapshot for the next start.
    public func stop() {
        // Once: the index is written once nothing changes it any more.
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        assembly.stop()
        snapshots.write()
    }

    /// Stops without writing the index's snapshot: what a crash leaves, for tests.
    func stopAsIfKilled() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        assembly.stop()
    }
}
