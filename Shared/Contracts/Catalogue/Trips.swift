import Foundation
import Wire

/// A member of a trip.
public struct TripMember: Codable, Sendable, Equatable {
    public enum Role: String, Codable, Sendable {
        case owner, member
    }

    public var userId: String
    public var role: Role
    public var joinedAt: Date

    public init(userId: String, role: Role, joinedAt: Date) {
        self.userId = userId
        self.role = role
        self.joinedAt = joinedAt
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
    /// Only in `catalogue.trips.get` and `catalogue.trips.invite`.
    public var members: [TripMember]?

    public init(id: String, ownerId: String, title: String, city: String, countryCode: String, lat: Double?, lon: Double?,
                start: LocalDate?, end: LocalDate?, createdAt: Date, members: [TripMember]? = nil) {
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
    }

    enum CodingKeys: String, CodingKey {
        case id, ownerId, title, city, countryCode, lat, lon, start, end, createdAt, members
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
    }
}
