import Foundation

/// The budgets of wrong passwords: in logins, and wherever an op asks for the
/// password (`auth.password.change`, `auth.delete`, a retried session request).
///
/// A budget must bound guessing without handing strangers a lock on someone else's
/// account. So a check is charged by where it comes from (its origin: the client's
/// address, an IPv6 client's /64, or a key):
/// - always to the account from this origin (five, so one address cannot guess on)
///   and to the origin across accounts (one address guessing many);
/// - from an origin the account signed in from before (a **known** origin), to
///   nothing else: what strangers get wrong elsewhere never stops the owner there;
/// - from any other origin, also to the account's budget for strangers, which does
///   not lock: past its first ten failures each further one waits twice as long as
///   the last did after the latest failure, up to a minute.
///
/// No budget spans every account: one did, and twenty addresses spent it for all.
/// Strangers together get at most `strangerGuessesPerHour` wrong passwords per
/// account per hour (PROTOCOL.md states it).
struct LoginPolicy: Sendable {
    var perAccountFromOrigin = 5
    var perOrigin = 50
    /// Strangers' failures on one account within the window before each further one waits.
    var strangersFree = 10
    /// The longest wait between strangers' failures on one account.
    var strangersMaxDelay: TimeInterval = 60
    var window: TimeInterval = 15 * 60
    /// How long a sign-in keeps its origin known to the account.
    var knownFor: TimeInterval = 90 * 86_400

    /// The budgets one check is charged to. `account` is `user:<id>` when the login
    /// names an account, else the login string itself (so a guess at a login that
    /// does not exist is throttled the same way and tells nothing).
    func budgets(account: String, origin: String, known: Bool) -> [FailureBudget] {
        var budgets = [
            FailureBudget(key: "account:\(account)|\(origin)", limit: perAccountFromOrigin,
                          refusal: "too many failed logins for this account from this address; try again later"),
            FailureBudget(key: "origin:\(origin)", limit: perOrigin, refusal: "too many failed logins from this address; try again later"),
        ]
        if !known {
            budgets.append(FailureBudget(key: "strangers:\(account)", limit: strangersFree,
                                         refusal: "too many failed logins for this account from new places; try again shortly, "
                                             + "or where you signed in before",
                                         spacing: .doubling(max: strangersMaxDelay)))
        }
        return budgets
    }

    /// What a right password clears: the account's budget from this origin (the
    /// origin's, and strangers', keep counting what others got wrong).
    func clearedOnSuccess(account: String, origin: String) -> [String] {
        ["account:\(account)|\(origin)"]
    }

    /// The most wrong passwords strangers together can send one account in an hour:
    /// the free ones, the doubling waits up to the cap, then one per `strangersMaxDelay`.
    /// (Letting the free ones age out to get them again costs a quiet window, in which
    /// the capped pace sends more.)
    var strangerGuessesPerHour: Int {
        var waits: [TimeInterval] = []
        var delay: TimeInterval = 2
        while delay < strangersMaxDelay { waits.append(delay); delay *= 2 }
        let rampSeconds = waits.reduce(0, +)
        return strangersFree + waits.count + Int(((3_600 - rampSeconds) / strangersMaxDelay).rounded(.up))
    }
}

/// Wrong passwords counted under `key` within the policy's window.
struct FailureBudget: Sendable, Equatable {
    enum Spacing: Sendable, Equatable {
        /// At most `limit`: the next waits until the oldest counted one ages out.
        case refuse
        /// Past `limit`, each further one waits 2 s, 4 s, 8 s … (up to `max`) after
        /// the latest one: slowed, never locked for the window.
        case doubling(max: TimeInterval)
    }

    var key: String
    var limit: Int
    /// The `rate_limited` message while it has no room.
    var refusal: String
    var spacing: Spacing = .refuse

    /// When a further failure may be charged, given `count` in the window (the
    /// `count - limit`-th oldest of them at `oldestOver`, the latest at `latest`);
    /// nil when now.
    func reopens(count: Int, oldestOver: TimeInterval, latest: TimeInterval, window: TimeInterval, now: TimeInterval) -> TimeInterval? {
        guard count >= limit else { return nil }
        switch spacing {
        case .refuse:
            return oldestOver + window
        case .doubling(let max):
            let doublings = min(count - limit + 1, 30)
            let wait = Swift.min(max, Double(1 << doublings))
            return latest + wait > now ? latest + wait : nil
        }
    }
}

/// A password check already counted as a failure in each of its budgets, before the
/// slow check ran; a right password takes the count back (`AuthStore.forgive`).
struct ChargedAttempt: Sendable {
    /// The rows that count it.
    var failureRows: [Int64]
    /// Budgets emptied when the password is right.
    var clearedOnSuccess: [String]
}

/// A budget with no room: refused until `reopensAt`.
struct BudgetSpent: Error {
    var budget: FailureBudget
    var reopensAt: Date
}
