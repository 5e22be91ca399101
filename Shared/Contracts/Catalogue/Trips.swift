import Foundation
import Wire

/// A member of a trip, or a buddy invited to it who has not answered yet.
public struct TripMember: Codable, Sendable, Equatable {
    public enum Role: String, Codable, Sendable {
        /// Made the trip.
        case owner
        /// On the trip: accepted an invitation (or was added before invitations needed accepting).
        case member
        /// Invited by the owner, not yet accepted: sees the trip, is not on it.
        case invited
    }

    public var userId: String
    public var role: Role
    /// When the owner invited them; nil for the owner and for members added before invitations.
    public var invitedAt: Date?
    /// When they joined; nil while only invited.
    public var joinedAt: Date?

    public init(userId: String, role: Role, invitedAt: Date? = nil, joinedAt: Date?) {
        self.userId = userId
        self.role = role
        self.invitedAt = invitedAt
        self.joinedAt = joinedAt
    }

    enum CodingKeys: String, CodingKey {
        case userId, role, invitedAt, joinedAt
    }

    // Both dates are always present, null when not (yet) so: a client reads one shape.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(userId, forKey: .userId)
        try container.encode(role, forKey: .role)
        try container.encode(invitedAt, forKey: .invitedAt)
        try container.encode(joinedAt, forKey: .joinedAt)
    }
}

/// A private trip shared with buddies.
public struct Trip: Codable, Sendable, Equatable {
    public var id: String
    public var ownerId: String
    public var title: String
    public var city: String
    public var countryCode: String
    public var lat: Double?
    public var lon: Double?
    public var start: LocalDate?
    public var end: LocalDate?
    public var createdAt: Date
    /// Only in `catalogue.trips.get`, `catalogue.trips.invite` and `catalogue.trips.accept`.
    public var members: [TripMember]?
    /// The caller's own role on the trip: `invited` marks an invitation to accept or decline.
    public var role: TripMember.Role?

    public init(id: String, ownerId: String, title: String, city: String, countryCode: String, lat: Double?, lon: Double?,
                start: LocalDate?, end: LocalDate?, createdAt: Date, members: [TripMember]? = nil, role: TripMember.Role? = nil) {
        self.id = id
        self.ownerId = ownerId
        self.title = title
        self.city = city
        self.countryCode = countryCode
        self.lat = lat
        self.lon = lon
        self.start = start
        self.end = end
        self.createdAt = createdAt
        self.members = members
        self.role = role
    }

    enum CodingKeys: String, CodingKey {
        case id, ownerId, title, city, countryCode, lat, lon, start, end, createdAt, members, role
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(ownerId, forKey: .ownerId)
        try container.encode(title, forKey: .title)
        try container.encode(city, forKey: .city)
        try container.encode(countryCode, forKey: .countryCode)
        try container.encode(lat, forKey: .lat)
        try container.encode(lon, forKey: .lon)
        try container.encode(start, forKey: .start)
        try container.encode(end, forKey: .end)
        try container.encode(createdAt, forKey: .createdAt)
        try container.encodeIfPresent(members, forKey: .members)
        try container.encodeIfPresent(role, forKey: .role)
    }
}
