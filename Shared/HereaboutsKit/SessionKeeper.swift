import Foundation

/// The session of one `Hereabouts`: loaded from its store once, saved on every
/// change, and refreshed once however many requests find their token refused at once.
actor SessionKeeper {
    private let store: any SessionStore
    private var loaded = false
    private var current: Session?
    private var refreshing: Task<Session, any Error>?
    /// Trades a refresh token for a new session (`POST /v1/auth/refresh`).
    private let refresher: @Sendable (String) async throws -> Session

    init(store: any SessionStore, refresher: @escaping @Sendable (String) async throws -> Session) {
        self.store = store
        self.refresher = refresher
    }

    func session() throws -> Session? {
        if !loaded {
            current = try store.load()
            loaded = true
        }
        return current
    }

    func set(_ session: Session?) throws {
        current = session
        loaded = true
        try store.save(session)
    }

    /// The token to send, or nil when signed out. One that runs out within `margin`
    /// is refreshed first, so a request is not sent only to be refused.
    func accessToken(margin: TimeInterval = 30) async throws -> String? {
        guard let session = try session() else { return nil }
        if session.accessTokenExpiresAt.timeIntervalSinceNow > margin { return session.accessToken }
        return try await refresh(replacing: session.accessToken).accessToken
    }

    /// A session whose access token is not `refused`: the one held if another caller
    /// refreshed already, else a refreshed one. A refresh token the server refuses
    /// ends the session (`signed_out`); a network failure keeps it for a later try.
    func refresh(replacing refused: String) async throws -> Session {
        guard let session = try session() else { throw HereaboutsError.signedOut("not signed in") }
        if session.accessToken != refused { return session }
        if let refreshing { return try await refreshing.value }
        let refreshToken = session.refreshToken
        let task = Task { [refresher] in try await refresher(refreshToken) }
        refreshing = task
        defer { refreshing = nil }
        do {
            let renewed = try await task.value
            try set(renewed)
            return renewed
        } catch let error as HereaboutsError where error.status == 401 {
            try set(nil)
            throw HereaboutsError.signedOut("the session has ended (\(error.detail)); sign in again")
        }
    }
}
