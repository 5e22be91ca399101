import Foundation
import Synchronization
import Wire

/// The users auth's feed reported deleted, in memory: their tokens are refused at
/// once, on every thread, without a database read. A service that follows
/// `auth.changes` keeps them in its own file and loads them at start.
public final class DeletedUsers: Sendable {
    private let users: Mutex<Set<String>>

    public init(_ users: Set<String>) {
        self.users = Mutex(users)
    }

    public func insert(_ ids: [String]) {
        users.withLock { $0.formUnion(ids) }
    }

    public var check: CallerCheck {
        CallerCheck(readsDatabase: false) { [self] caller in
            if users.withLock({ $0.contains(caller.userID) }) {
                throw ServiceError.unauthenticated("this account was deleted")
            }
        }
    }
}
