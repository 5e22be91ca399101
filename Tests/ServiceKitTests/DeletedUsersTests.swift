import Contracts
import Foundation
import GRDB
@testable import ServiceKit
import TestThreads
import Testing

@Suite("The users auth's feed deleted", .ownThread)
struct DeletedUsersTests {
    private struct Undone: Error {}

    @Test("users deleted in a batch are refused once it commits, not when it is undone, and still after the file is opened again")
    func refusedOnceCommitted() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("hb-deleted-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = ServiceDatabase.path(service: "toy", in: directory.path)
        func open() throws -> (ServiceDatabase, DeletedUsers) {
            let database = try ServiceDatabase(path: path) { DeletedUsers.register(in: &$0) }
            return (database, try DeletedUsers(in: database))
        }
        func refused(_ user: String, by users: DeletedUsers) -> Bool {
            (try? users.check.check(Caller(userID: user, sessionID: "s", anonymous: false, expiresAt: .distantFuture))) == nil
        }
        let (database, users) = try open()
        #expect(throws: Undone.self) {
            try database.pool.write { db in
                try users.record([UserChange(seq: 1, type: .deleted, userId: "cid", user: nil)], in: db)
                throw Undone()
            }
        }
        try database.pool.write { db in
            try users.record([UserChange(seq: 2, type: .updated, userId: "ann", user: nil),
                              UserChange(seq: 3, type: .deleted, userId: "bob", user: nil)], in: db)
        }
        #expect(refused("bob", by: users) && !refused("ann", by: users) && !refused("cid", by: users))
        let (_, reopened) = try open()
        #expect(refused("bob", by: reopened) && !refused("ann", by: reopened) && !refused("cid", by: reopened))
    }
}
