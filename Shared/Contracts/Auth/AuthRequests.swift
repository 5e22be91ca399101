import Foundation
import Wire

/// A request that holds a password: the password is left out of the fingerprint a
/// service keeps for a retried request id, and checked again on the retry instead.
public protocol HoldsSecrets {
    var withoutSecrets: Self { get }
}

/// `auth.register`, and `auth.upgrade` of an anonymous user.
public struct RegisterRequest: ValidatedBody, HoldsSecrets, Equatable {
    public var email: String
    public var password: String
    public var username: String?
    public var firstName: String?
    public var lastName: String?
    public var displayName: String?
    public var phone: String?
    public var attributes: Attributes?
    /// The language the account's mail is written in (a BCP 47 tag; German for `de…`,
    /// English otherwise). The edge fills it from `Accept-Language` when it is absent.
    public var lang: String?

    public init(email: String, password: String, username: String? = nil, firstName: String? = nil,
                lastName: String? = nil, displayName: String? = nil, phone: String? = nil,
                attributes: Attributes? = nil, lang: String? = nil) {
        self.email = email
        self.password = password
        self.username = username
        self.firstName = firstName
        self.lastName = lastName
        self.displayName = displayName
        self.phone = phone
        self.attributes = attributes
        self.lang = lang
    }

    public func validate() throws {
        try AuthRules.email(email)
        if let lang { try AuthRules.language(lang) }
        try AuthRules.password(password)
        if let username { try AuthRules.username(username) }
        if let firstName { try AuthRules.name(firstName, field: "firstName") }
        if let lastName { try AuthRules.name(lastName, field: "lastName") }
        if let displayName { try AuthRules.name(displayName, field: "displayName") }
        if let phone { try AuthRules.phone(phone) }
        try attributes?.validate()
    }

    public var withoutSecrets: RegisterRequest {
        var copy = self
        copy.password = ""
        return copy
    }
}

public struct LoginRequest: ValidatedBody, HoldsSecrets, Equatable {
    /// An email address or a username.
    public var login: String
    public var password: String

    public init(login: String, password: String) {
        self.login = login
        self.password = password
    }

    public func validate() throws {
        try Check.length(login, field: "login", in: 1...AuthRules.email.upperBound)
        try Check.length(password, field: "password", in: 1...AuthRules.password.upperBound)
    }

    public var withoutSecrets: LoginRequest {
        LoginRequest(login: login, password: "")
    }
}

/// `auth.refresh` and `auth.logout`.
public struct RefreshRequest: ValidatedBody, Equatable {
    public var refreshToken: String

    public init(refreshToken: String) { self.refreshToken = refreshToken }

    public func validate() throws {
        try Check.length(refreshToken, field: "refreshToken", in: 1...512)
    }
}

/// Which contact details to show; an absent flag is left as it is.
public struct ContactUpdate: Codable, Sendable, Equatable {
    public var showEmail: Bool?
    public var showPhone: Bool?

    public init(showEmail: Bool? = nil, showPhone: Bool? = nil) {
        self.showEmail = showEmail
        self.showPhone = showPhone
    }
}

/// `auth.profile.update`: an absent field is left as it is; `null` clears it.
/// `attributes` replaces the whole set. Frame 1, when sent, is the new avatar;
/// `removeAvatar: true` removes the current one.
public struct ProfileUpdateRequest: ValidatedBody, Equatable {
    public var displayName: Patch<String>
    public var firstName: Patch<String>
    public var lastName: Patch<String>
    public var phone: Patch<String>
    public var attributes: Patch<Attributes>
    public var contact: ContactUpdate?
    public var removeAvatar: Bool

    public init(displayName: Patch<String> = .unchanged, firstName: Patch<String> = .unchanged,
                lastName: Patch<String> = .unchanged, phone: Patch<String> = .unchanged,
                attributes: Patch<Attributes> = .unchanged, contact: ContactUpdate? = nil, removeAvatar: Bool = false) {
        self.displayName = displayName
        self.firstName = firstName
        self.lastName = lastName
        self.phone = phone
        self.attributes = attributes
        self.contact = contact
        self.removeAvatar = removeAvatar
    }

    enum CodingKeys: String, CodingKey {
        case displayName, firstName, lastName, phone, attributes, contact, removeAvatar
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        displayName = try container.decodePatch(String.self, forKey: .displayName)
        firstName = try container.decodePatch(String.self, forKey: .firstName)
        lastName = try container.decodePatch(String.self, forKey: .lastName)
        phone = try container.decodePatch(String.self, forKey: .phone)
        attributes = try container.decodePatch(Attributes.self, forKey: .attributes)
        contact = try container.decodeIfPresent(ContactUpdate.self, forKey: .contact)
        removeAvatar = try container.decodeIfPresent(Bool.self, forKey: .removeAvatar) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodePatch(displayName, forKey: .displayName)
        try container.encodePatch(firstName, forKey: .firstName)
        try container.encodePatch(lastName, forKey: .lastName)
        try container.encodePatch(phone, forKey: .phone)
        try container.encodePatch(attributes, forKey: .attributes)
        try container.encodeIfPresent(contact, forKey: .contact)
        if removeAvatar { try container.encode(true, forKey: .removeAvatar) }
    }

    public func validate() throws {
        if case .set(let value) = displayName { try AuthRules.name(value, field: "displayName") }
        if case .set(let value) = firstName { try AuthRules.name(value, field: "firstName") }
        if case .set(let value) = lastName { try AuthRules.name(value, field: "lastName") }
        if case .set(let value) = phone { try AuthRules.phone(value) }
        if case .set(let value) = attributes { try value.validate() }
    }
}

public struct LocationSetRequest: ValidatedBody, Equatable {
    public var lat: Double
    public var lon: Double
    /// Absent means false: a location is private unless the user says otherwise.
    public var discoverable: Bool

    public init(lat: Double, lon: Double, discoverable: Bool = false) {
        self.lat = lat
        self.lon = lon
        self.discoverable = discoverable
    }

    enum CodingKeys: String, CodingKey { case lat, lon, discoverable }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        lat = try container.decode(Double.self, forKey: .lat)
        lon = try container.decode(Double.self, forKey: .lon)
        discoverable = try container.decodeIfPresent(Bool.self, forKey: .discoverable) ?? false
    }

    public func validate() throws {
        try Check.latitude(lat)
        try Check.longitude(lon)
    }
}

public struct PasswordChangeRequest: ValidatedBody, HoldsSecrets, Equatable {
    public var oldPassword: String
    public var newPassword: String

    public init(oldPassword: String, newPassword: String) {
        self.oldPassword = oldPassword
        self.newPassword = newPassword
    }

    public func validate() throws {
        try Check.length(oldPassword, field: "oldPassword", in: 1...AuthRules.password.upperBound)
        try AuthRules.password(newPassword, field: "newPassword")
    }

    public var withoutSecrets: PasswordChangeRequest {
        PasswordChangeRequest(oldPassword: "", newPassword: "")
    }
}

public struct UsersGetRequest: ValidatedBody, Equatable {
    public var ids: [String]
    public static let maxIDs = 200

    public init(ids: [String]) { self.ids = ids }

    public func validate() throws {
        try Check.entityIDs(ids, field: "ids", max: Self.maxIDs)
    }
}

/// A body of one email address: `auth.users.lookup`, `auth.password.forgot`,
/// `auth.email.confirm`, `auth.mail.latest`.
public struct EmailRequest: ValidatedBody, Equatable {
    public var email: String
    public init(email: String) { self.email = email }

    public func validate() throws {
        try AuthRules.email(email)
    }
}

public typealias UsersLookupRequest = EmailRequest

public struct AvatarGetRequest: ValidatedBody, Equatable {
    public var userId: String
    public init(userId: String) { self.userId = userId }

    public func validate() throws {
        try Check.entityID(userId, field: "userId")
    }
}

/// `auth.delete`: `password` is required of registered users; anonymous users
/// have none.
public struct DeleteRequest: ValidatedBody, HoldsSecrets, Equatable {
    public var password: String?
    public init(password: String?) { self.password = password }

    public func validate() throws {
        if let password { try Check.length(password, field: "password", in: 1...AuthRules.password.upperBound) }
    }

    public var withoutSecrets: DeleteRequest { DeleteRequest(password: nil) }
}

/// `auth.sessions.ended`: which of these sessions have ended (signed out, revoked,
/// forgotten). For services that keep something per session (chat's devices).
public struct SessionsRequest: ValidatedBody, Equatable {
    public var sessionIds: [String]
    public static let maxIDs = 500

    public init(sessionIds: [String]) { self.sessionIds = sessionIds }

    public func validate() throws {
        try Check.entityIDs(sessionIds, field: "sessionIds", max: Self.maxIDs)
    }
}

public struct SessionsEndedReply: Codable, Sendable, Equatable {
    /// Those of the request's sessions that are no longer active.
    public var ended: [String]
    public init(ended: [String]) { self.ended = ended }
}
