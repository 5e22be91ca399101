import Foundation
import ServiceKit
import Synchronization
import Wire

/// The users auth's feed reported deleted, in memory: their tokens are refused at
/// once, on every thread, without a database read.
final class DeletedUsers: Sendable {
    private let users: Mutex<Set<String>>

    init(_ users: Set<String>) {
        self.users = Mutex(users)
    }

    func insert(_ ids: [String]) {
        users.withLock { $0.formUnion(ids) }
    }

    var check: CallerCheck {
        CallerCheck(readsDatabase: false) { [self] caller in
            if users.withLock({ $0.contains(caller.userID) }) {
                throw ServiceError.unauthenticated("this account was deleted")
            }
        }
    }
}
