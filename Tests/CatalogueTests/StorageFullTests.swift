import Contracts
import Foundation
import ServiceClient
import ServiceKit
import TestThreads
import Testing
import Wire

/// A full disk is an operational state: writes are refused with `unavailable` and
/// words that say so, reads go on, nothing acknowledged is lost, and writes are
/// taken again once there is room. The full disk is made with the file's size limit
/// (`HEREABOUTS_DATABASE_MAX_BYTES`), which SQLite enforces with the very error a
/// full disk gives (`SQLITE_FULL`).
@Suite("Catalogue on full storage", .ownThread)
struct StorageFullTests {
    @Test("writes past the storage get unavailable saying it is full; reads go on, nothing acknowledged is lost, and writes resume when room is made")
    func fullStorage() throws {
        let fixture = try CatalogueFixture(environment: ["HEREABOUTS_DATABASE_MAX_BYTES": "1M"])
        let owner = try fixture.user("shop")
        let text = String(repeating: "A long description that fills pages. ", count: 100)
        var kept: [Post] = []
        var refusal: ServiceError?
        for number in 0..<1_000 {
            var draft = PostDraft.sample("Lamp \(number)")
            draft.text = text
            do {
                kept.append(try fixture.create(draft, token: owner.token))
            } catch let error as ServiceError {
                refusal = error
                break
            }
        }
        let full = try #require(refusal, "1,000 posts of 3.7 KB fitted in 1 MiB")
        #expect(full.code == .unavailable && full.message.contains("storage is full"), "\(full)")
        #expect(kept.count > 10)

        // Reads go on, and every acknowledged create is there.
        for post in kept {
            #expect(try fixture.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post.title == post.title)
        }
        let health = try fixture.client.call(HealthAPI.health("catalogue"), Empty())
        let storage = try #require(health.storage)
        #expect(storage.freeBytes < 64 * 1024 && storage.fileBytes > 512 * 1024 && storage.totalBytes > 0, "\(storage)")
        let ready = try fixture.client.call(HealthAPI.ready("catalogue"), Empty())
        #expect(ready.database?.writable == false && ready.ready == false)

        // Room made (posts deleted free their pages): readiness comes back, and writes are taken again.
        var deleted = 0
        for post in kept.prefix(kept.count / 2) {
            do {
                _ = try fixture.client.call(CatalogueAPI.delete, IDRequest(id: post.id), token: owner.token)
                deleted += 1
            } catch let error as ServiceError {
                // A delete writes too; while the file is full it is refused the same way.
                #expect(error.code == .unavailable && error.message.contains("storage is full"), "\(error)")
            }
        }
        #expect(deleted > kept.count / 4, "\(deleted) of \(kept.count / 2) deletes went through")
        var readyAgain = try fixture.client.call(HealthAPI.ready("catalogue"), Empty())
        let deadline = Date().addingTimeInterval(30)
        while !readyAgain.ready, Date() < deadline {
            Thread.sleep(forTimeInterval: 0.1)
            readyAgain = try fixture.client.call(HealthAPI.ready("catalogue"), Empty())
        }
        #expect(readyAgain.ready && readyAgain.database?.writable == true, "\(readyAgain)")
        #expect((try fixture.client.call(HealthAPI.health("catalogue"), Empty()).storage?.freeBytes ?? 0) >= 64 * 1024)
        var draft = PostDraft.sample("After the clean-up")
        draft.text = text
        let after = try fixture.create(draft, token: owner.token)
        #expect(try fixture.client.call(CatalogueAPI.get, IDRequest(id: after.id)).post.title == "After the clean-up")
    }
}
