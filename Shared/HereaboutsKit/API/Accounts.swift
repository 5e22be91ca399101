import Foundation

extension Hereabouts {
    /// The session held (from this launch or an earlier one), or nil when signed out.
    public var currentSession: Session? {
        get async throws { try await sessions.session() }
    }

    /// A new anonymous user: no email, no password, everything saved kept when the
    /// user registers later with `upgrade(email:password:)`.
    @discardableResult
    public func signInAnonymously() async throws -> User {
        try await signIn { try await $0.anonymous().created.body.json }
    }

    @discardableResult
    public func register(email: String, password: String, displayName: String? = nil, username: String? = nil) async throws -> User {
        try await signIn {
            try await $0.register(body: .json(.init(displayName: displayName, email: email, password: password, username: username)))
                .created.body.json
        }
    }

    /// Signs in with an email address or a username.
    @discardableResult
    public func login(_ login: String, password: String) async throws -> User {
        try await signIn { try await $0.login(body: .json(.init(login: login, password: password))).ok.body.json }
    }

    /// Gives the anonymous user signed in an account; their id and what they saved stay.
    @discardableResult
    public func upgrade(email: String, password: String, displayName: String? = nil) async throws -> User {
        try await signIn {
            try await $0.upgrade(body: .json(.init(displayName: displayName, email: email, password: password))).ok.body.json
        }
    }

    /// Ends the session on the server and forgets it here (forgotten here even when
    /// the server cannot be reached).
    public func logout() async throws {
        guard let session = try await sessions.session() else { return }
        try await sessions.set(nil)
        _ = try await send { try await $0.logout(body: .json(.init(refreshToken: session.refreshToken))).noContent }
    }

    /// The signed-in user.
    public func me() async throws -> User {
        try await send { try await $0.me().ok.body.json.user }
    }

    /// Changes the signed-in user's profile: members left nil stay as they are.
    @discardableResult
    public func updateProfile(displayName: String? = nil, phone: String? = nil, attributes: Attributes? = nil) async throws -> User {
        try await send {
            try await $0.updateProfile(body: .json(.init(attributes: attributes, displayName: displayName, phone: phone))).ok.body.json.user
        }
    }

    /// The signed-in user's home, for `usersNear`; `discoverable` lets others find them.
    public func setLocation(latitude: Double, longitude: Double, discoverable: Bool = true) async throws {
        _ = try await send {
            try await $0.setLocation(body: .json(.init(discoverable: discoverable, lat: latitude, lon: longitude))).ok
        }
    }

    /// A user's public profile.
    public func user(_ id: String) async throws -> PublicProfile {
        try await send { try await $0.getUser(path: .init(id: id)).ok.body.json.user }
    }

    /// The user registered with `email` (for inviting a buddy one knows by address).
    public func user(email: String) async throws -> PublicProfile {
        try await send { try await $0.lookupUser(query: .init(email: email)).ok.body.json.user }
    }

    /// Users whose home is within `radius` metres of `origin`, nearest band first;
    /// `attributes` must all match theirs (e.g. `["certification": "AOWD"]`).
    public func usersNear(_ origin: SearchOrigin, radius: Double, attributes: [String: String] = [:],
                          limit: Int? = nil) async throws -> [NearUser] {
        let filter = attributes.isEmpty ? nil
            : String(decoding: try JSONSerialization.data(withJSONObject: attributes, options: [.sortedKeys]), as: UTF8.self)
        return try await send {
            try await $0.usersNear(query: .init(lat: origin.latitude, lon: origin.longitude, place: origin.placeName,
                                                radius: radius, attributes: filter, limit: limit)).ok.body.json.users
        }
    }

    // MARK: Account mail

    /// Confirms an address with the token of a mailed link (`…/email/verify?token=…`,
    /// which an app's universal link hands over); answers the address now confirmed.
    @discardableResult
    public func verifyEmail(token: String) async throws -> String {
        try await send { try await $0.verifyEmail(body: .json(.init(token: token))).ok.body.json.email }
    }

    /// Mails the signed-in user's address a new confirmation link; answers the address.
    @discardableResult
    public func resendEmailVerification() async throws -> String {
        try await send { try await $0.resendEmailVerification().accepted.body.json.sentTo }
    }

    /// Mails a password reset link if an account has `email`. It succeeds the same
    /// either way, so say "if an account has this address, a mail is on its way".
    public func forgotPassword(email: String) async throws {
        _ = try await send { try await $0.forgotPassword(body: .json(.init(email: email))).accepted }
    }

    /// Sets a new password with a reset link's token and signs in: every other session
    /// of the account has ended.
    @discardableResult
    public func resetPassword(token: String, newPassword: String) async throws -> User {
        try await signIn { try await $0.resetPassword(body: .json(.init(newPassword: newPassword, token: token))).ok.body.json }
    }

    /// Mails `email` a link that makes it the account's address (and the old address a
    /// notice); until it is opened, `User.pendingEmail` holds it. Answers the address.
    @discardableResult
    public func changeEmail(to email: String, password: String) async throws -> String {
        try await send { try await $0.changeEmail(body: .json(.init(email: email, password: password))).accepted.body.json.sentTo }
    }

    private func signIn(_ call: (Client) async throws -> Components.Schemas.Session) async throws -> User {
        let reply = try await send(call)
        try await sessions.set(Session(reply))
        return reply.user
    }
}
