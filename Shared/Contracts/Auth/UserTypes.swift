import Foundation
import Wire

/// A value of a user's free profile attributes (certification, years of
/// experience, number of dives …): a string, number or boolean.
public enum AttributeValue: Codable, Sendable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)

    public init(from decoder: any Decoder) throws {
        let value = try decoder.singleValueContainer().decode(JSONValue.self)
        switch value {
        case .string(let string): self = .string(string)
        case .number(let number) where number.doubleValue.isFinite: self = .number(number.doubleValue)
        case .bool(let flag): self = .bool(flag)
        default:
            let field = FieldPath.string(decoder.codingPath)
            throw ServiceError.invalidArgument(field: field, "\(field) must be a string, a finite number or a boolean")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .string(let string): try container.encode(string)
        case .number(let number): try container.encode(number)
        case .bool(let flag): try container.encode(flag)
        }
    }
}

/// A user's free attributes, written with their keys in order so equal sets
/// always read the same.
public struct Attributes: Codable, Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public var values: [String: AttributeValue]

    public static let maxCount = 32
    public static let keyLength = 1...64
    public static let maxStringLength = 1000

    public init(_ values: [String: AttributeValue] = [:]) { self.values = values }

    public init(dictionaryLiteral elements: (String, AttributeValue)...) {
        self.values = Dictionary(elements, uniquingKeysWith: { $1 })
    }

    public subscript(key: String) -> AttributeValue? { values[key] }
    public var isEmpty: Bool { values.isEmpty }

    public init(from decoder: any Decoder) throws {
        values = try decoder.singleValueContainer().decode([String: AttributeValue].self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: AnyCodingKey.self)
        for key in values.keys.sorted() {
            try container.encode(values[key], forKey: AnyCodingKey(key))
        }
    }

    public func validate(field: String = "attributes") throws {
        guard values.count <= Self.maxCount else {
            throw ServiceError.invalidArgument(field: field, "\(field) may hold at most \(Self.maxCount) keys (it has \(values.count))")
        }
        for (key, value) in values {
            try Check.length(key, field: "\(field) key", in: Self.keyLength)
            if case .string(let string) = value {
                try Check.length(string, field: "\(field).\(key)", in: 0...Self.maxStringLength)
            }
        }
    }
}

/// A user's saved home location (set once, not tracked).
public struct UserLocation: Codable, Sendable, Equatable {
    public var lat: Double
    public var lon: Double
    /// Whether others may find this user with `geo.users.near`.
    public var discoverable: Bool

    public init(lat: Double, lon: Double, discoverable: Bool) {
        self.lat = lat
        self.lon = lon
        self.discoverable = discoverable
    }
}

/// Which contact details a user shows in their public profile.
public struct ContactVisibility: Codable, Sendable, Equatable {
    public var showEmail: Bool
    public var showPhone: Bool

    public init(showEmail: Bool = false, showPhone: Bool = false) {
        self.showEmail = showEmail
        self.showPhone = showPhone
    }
}

/// A user as they see themselves (`auth.me` and every session reply): all fields,
/// absent ones as `null`.
public struct User: Codable, Sendable, Equatable {
    public var id: String
    public var email: String?
    public var username: String?
    public var firstName: String?
    public var lastName: String?
    public var displayName: String?
    public var phone: String?
    public var attributes: Attributes
    public var anonymous: Bool
    public var location: UserLocation?
    public var contact: ContactVisibility
    public var hasAvatar: Bool
    public var createdAt: Date
    /// Whether the owner of `email` confirmed it (a link mailed to it was opened).
    public var emailVerified: Bool
    /// An address `auth.email.change` mailed a confirmation to, until it is confirmed.
    public var pendingEmail: String?
    /// The language of the account's mail: `de` or `en` (BCP 47 primary tags).
    public var lang: String?

    public init(id: String, email: String? = nil, username: String? = nil, firstName: String? = nil,
                lastName: String? = nil, displayName: String? = nil, phone: String? = nil,
                attributes: Attributes = [:], anonymous: Bool, location: UserLocation? = nil,
                contact: ContactVisibility = ContactVisibility(), hasAvatar: Bool = false, createdAt: Date,
                emailVerified: Bool = false, pendingEmail: String? = nil, lang: String? = nil) {
        self.id = id
        self.email = email
        self.username = username
        self.firstName = firstName
        self.lastName = lastName
        self.displayName = displayName
        self.phone = phone
        self.attributes = attributes
        self.anonymous = anonymous
        self.location = location
        self.contact = contact
        self.hasAvatar = hasAvatar
        self.createdAt = createdAt
        self.emailVerified = emailVerified
        self.pendingEmail = pendingEmail
        self.lang = lang
    }

    enum CodingKeys: String, CodingKey {
        case id, email, username, firstName, lastName, displayName, phone, attributes, anonymous, location,
             contact, hasAvatar, createdAt, emailVerified, pendingEmail, lang
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        email = try container.decodeIfPresent(String.self, forKey: .email)
        username = try container.decodeIfPresent(String.self, forKey: .username)
        firstName = try container.decodeIfPresent(String.self, forKey: .firstName)
        lastName = try container.decodeIfPresent(String.self, forKey: .lastName)
        displayName = try container.decodeIfPresent(String.self, forKey: .displayName)
        phone = try container.decodeIfPresent(String.self, forKey: .phone)
        attributes = try container.decode(Attributes.self, forKey: .attributes)
        anonymous = try container.decode(Bool.self, forKey: .anonymous)
        location = try container.decodeIfPresent(UserLocation.self, forKey: .location)
        contact = try container.decode(ContactVisibility.self, forKey: .contact)
        hasAvatar = try container.decode(Bool.self, forKey: .hasAvatar)
        createdAt = try container.decode(Date.self, forKey: .createdAt)
        // Absent from what servers before account mail wrote.
        emailVerified = try container.decodeIfPresent(Bool.self, forKey: .emailVerified) ?? false
        pendingEmail = try container.decodeIfPresent(String.self, forKey: .pendingEmail)
        lang = try container.decodeIfPresent(String.self, forKey: .lang)
    }

    /// Absent fields are written as `null` rather than left out, so a client sees
    /// every field of its own user.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(email, forKey: .email)
        try container.encode(username, forKey: .username)
        try container.encode(firstName, forKey: .firstName)
        try container.encode(lastName, forKey: .lastName)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(phone, forKey: .phone)
        try container.encode(attributes, forKey: .attributes)
        try container.encode(anonymous, forKey: .anonymous)
        try container.encode(location, forKey: .location)
        try container.encode(contact, forKey: .contact)
        try container.encode(hasAvatar, forKey: .hasAvatar)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encode(emailVerified, forKey: .emailVerified)
        try container.encode(pendingEmail, forKey: .pendingEmail)
        try container.encode(lang, forKey: .lang)
    }

    /// What others may see of this user.
    public var publicProfile: PublicProfile {
        PublicProfile(id: id, displayName: displayName, username: username, attributes: attributes,
                      hasAvatar: hasAvatar,
                      email: contact.showEmail ? email : nil,
                      phone: contact.showPhone ? phone : nil)
    }
}

/// A user as others see them. `email` and `phone` are present only where the owner
/// chose to show them.
public struct PublicProfile: Codable, Sendable, Equatable {
    public var id: String
    public var displayName: String?
    public var username: String?
    public var attributes: Attributes
    public var hasAvatar: Bool
    public var email: String?
    public var phone: String?

    public init(id: String, displayName: String?, username: String?, attributes: Attributes,
                hasAvatar: Bool, email: String? = nil, phone: String? = nil) {
        self.id = id
        self.displayName = displayName
        self.username = username
        self.attributes = attributes
        self.hasAvatar = hasAvatar
        self.email = email
        self.phone = phone
    }

    enum CodingKeys: String, CodingKey { case id, displayName, username, attributes, hasAvatar, email, phone }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(displayName, forKey: .displayName)
        try container.encode(username, forKey: .username)
        try container.encode(attributes, forKey: .attributes)
        try container.encode(hasAvatar, forKey: .hasAvatar)
        try container.encodeIfPresent(email, forKey: .email)
        try container.encodeIfPresent(phone, forKey: .phone)
    }
}

/// A user as `auth.changes` carries them to other services: the public profile,
/// whether the user is anonymous, and the home location only while discoverable.
public struct FeedUser: Codable, Sendable, Equatable {
    public var profile: PublicProfile
    public var anonymous: Bool
    public var location: UserLocation?
    /// Whether the user confirmed their address: services refuse writes of registered
    /// users who did not when `HEREABOUTS_REQUIRE_VERIFIED_EMAIL=writes`.
    public var emailVerified: Bool

    public init(profile: PublicProfile, anonymous: Bool, location: UserLocation?, emailVerified: Bool = false) {
        self.profile = profile
        self.anonymous = anonymous
        self.location = location
        self.emailVerified = emailVerified
    }

    /// What followers see of `user`: a home only while it is discoverable, and then
    /// only its `HomeGrid` cell.
    public init(_ user: User) {
        let home = user.location.flatMap { location -> UserLocation? in
            guard location.discoverable else { return nil }
            let cell = HomeGrid.snap(lat: location.lat, lon: location.lon)
            return UserLocation(lat: cell.lat, lon: cell.lon, discoverable: true)
        }
        self.init(profile: user.publicProfile, anonymous: user.anonymous, location: home, emailVerified: user.emailVerified)
    }

    enum CodingKeys: String, CodingKey { case anonymous, location, emailVerified }

    public init(from decoder: any Decoder) throws {
        profile = try PublicProfile(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        anonymous = try container.decode(Bool.self, forKey: .anonymous)
        location = try container.decodeIfPresent(UserLocation.self, forKey: .location)
        // Absent from feed entries written before account mail.
        emailVerified = try container.decodeIfPresent(Bool.self, forKey: .emailVerified) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        try profile.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(anonymous, forKey: .anonymous)
        try container.encode(location, forKey: .location)
        try container.encode(emailVerified, forKey: .emailVerified)
    }
}

/// One entry of `auth.changes`.
public struct UserChange: FeedChange, Equatable {
    public enum Kind: String, Codable, Sendable {
        case updated = "user.updated"
        case deleted = "user.deleted"
    }

    public var seq: Int64
    public var type: Kind
    public var userId: String
    /// Absent for `user.deleted`.
    public var user: FeedUser?

    public init(seq: Int64, type: Kind, userId: String, user: FeedUser?) {
        self.seq = seq
        self.type = type
        self.userId = userId
        self.user = user
    }

    public var entity: String { userId }

    public static func deletion(of entity: String, seq: Int64) -> UserChange {
        UserChange(seq: seq, type: .deleted, userId: entity, user: nil)
    }
}
