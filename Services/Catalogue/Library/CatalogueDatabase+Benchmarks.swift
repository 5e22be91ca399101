import Contracts
import Foundation
import GRDB
import ServiceKit

/// Catalogue's write path without sockets, for the benchmark tool's in-process
/// measurements.
@_spi(Benchmarks)
public final class CatalogueWritePath: Sendable {
    public let database: ServiceDatabase
    private let store: CatalogueStore

    public init(settings: ServiceSettings) throws {
        database = try ServiceDatabase(path: settings.databasePath, durability: .normal) { CatalogueSchema.register(in: &$0) }
        store = CatalogueStore(database: database)
    }

    /// Makes a post ready as `catalogue.posts.create` does outside its transaction.
    public func prepare(_ draft: PostDraft) -> [UInt8] {
        store.prepare(draft, owner: "owner-1", now: Date()).json
    }

    /// Inserts a post for a fixed owner as `catalogue.posts.create` does; returns its JSON.
    public func insert(_ draft: PostDraft, in db: Database) throws -> [UInt8] {
        let new = store.prepare(draft, owner: "owner-1", now: Date())
        try store.insert(new, in: db)
        return new.json
    }
}
