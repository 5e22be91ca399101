import Foundation

/// The budgets of wrong passwords: in logins, and wherever an op asks for the
/// password (`auth.password.change`, `auth.delete`, a retried session request).
///
/// One budget alone fails one way or another: five tries per login string lets
/// anyone lock a user out and lets a guesser try every account once; a budget per
/// address alone lets a botnet guess freely. So each check is charged to four:
/// the account from this origin (the protocol's five, so a stranger elsewhere
/// cannot lock the user out), the account from anywhere (many addresses guessing
/// one password), the origin across accounts (one address guessing many), and all
/// failures together (a campaign from many addresses at many accounts).
struct LoginPolicy: Sendable {
    var perAccountFromOrigin = 5
    var perAccount = 50
    var perOrigin = 50
    var overall = 1_000
    var window: TimeInterval = 15 * 60

    /// The budgets one check is charged to. `account` is the user's id when the login
    /// names an account, else the login string itself (so a guess at a login that
    /// does not exist is throttled the same way and tells nothing).
    func budgets(account: String, origin: String) -> [FailureBudget] {
        [
            FailureBudget(key: "account:\(account)|\(origin)", limit: perAccountFromOrigin,
                          refusal: "too many failed logins for this account; try again later"),
            FailureBudget(key: "account:\(account)", limit: perAccount,
                          refusal: "too many failed logins for this account; try again later"),
            FailureBudget(key: "origin:\(origin)", limit: perOrigin,
                          refusal: "too many failed logins from this address; try again later"),
            FailureBudget(key: "all", limit: overall, refusal: "too many failed logins; try again later"),
        ]
    }

    /// What a right password clears: the account's own budgets (the origin's and the
    /// overall ones keep counting what others got wrong).
    func clearedOnSuccess(account: String, origin: String) -> [String] {
        ["account:\(account)|\(origin)", "account:\(account)"]
    }
}

/// At most `limit` wrong passwords counted under `key` within the policy's window.
struct FailureBudget: Sendable, Equatable {
    var key: String
    var limit: Int
    /// The `rate_limited` message once it is spent.
    var refusal: String
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
