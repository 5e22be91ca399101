import Contracts
import Foundation
import Logging
import ServiceKit

/// The favourites service: each user's saved post ids in
/// `<data dir>/favourites.sqlite`, kept consistent by following `catalogue.changes`
/// (posts that exist; deleted posts leave every list) and `auth.changes` (a deleted
/// user's list goes, and their tokens are refused).
public final class FavouritesService: AssembledService {
    public let assembly: ServiceAssembly
    let store: FavouritesStore
    let postFollower: ChangeFollower<PostChange>
    let userFollower: ChangeFollower<UserChange>

    public var settings: ServiceSettings { assembly.settings }

    public init(settings: ServiceSettings, logger: Logger) throws {
        let base = try ServiceBase(settings: settings, logger: logger) { FavouritesSchema.register(in: &$0) }
        let store = FavouritesStore(database: base.database)
        postFollower = try base.followPosts(held: store.heldPostIds) { changes, db in try store.apply(changes, in: db) }
        userFollower = try base.followUsers(held: store.heldUserIds) { changes, db in try store.apply(changes, in: db) }
        var router = Router(service: FavouritesAPI.service)
        FavouritesHandlers(store: store).register(into: &router)
        self.store = store
        assembly = try ServiceAssembly(base, service: FavouritesAPI.service, router: router, followers: [postFollower, userFollower])
    }
}
