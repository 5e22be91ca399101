import Contracts
import Foundation
import Logging
import ServiceKit

/// The catalogue service: posts, images, ratings and trips in
/// `<data dir>/catalogue.sqlite`, the `catalogue.changes` feed, and a follower of
/// `auth.changes`.
public final class CatalogueService: AssembledService {
    public let assembly: ServiceAssembly
    let store: CatalogueStore
    let follower: ChangeFollower<UserChange>

    public var settings: ServiceSettings { assembly.settings }

    public init(settings: ServiceSettings, logger: Logger) throws {
        let base = try ServiceBase(settings: settings, logger: logger) { CatalogueSchema.register(in: &$0) }
        let store = CatalogueStore(database: base.database)
        follower = try base.followUsers(held: store.heldUserIds) { changes, db in try store.apply(changes, now: Date(), in: db) }
        var router = Router(service: CatalogueAPI.service)
        CatalogueHandlers(store: store).register(into: &router)
        base.requireConfirmedEmail(for: [CatalogueAPI.create.name, CatalogueAPI.importPosts.name, CatalogueAPI.update.name,
                                         CatalogueAPI.addImage.name, CatalogueAPI.rate.name], in: &router)
        self.store = store
        assembly = try ServiceAssembly(base, service: CatalogueAPI.service, router: router, followers: [follower],
                                       publishing: .changes(store.outbox))
    }
}
