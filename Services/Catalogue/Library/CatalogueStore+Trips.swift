import Contracts
import Foundation
import GRDB
import Wire

extension CatalogueStore {
    func insertTrip(_ request: CreateTripRequest, owner: String, now: Date, in db: Database) throws -> Trip {
        let trip = Trip(id: Identifier.sortable(), ownerId: owner, title: request.title, city: request.city,
                        countryCode: request.countryCode.uppercased(), lat: request.lat, lon: request.lon,
                        start: request.start, end: request.end, createdAt: now)
        try db.execute(sql: """
            INSERT INTO trip (id, owner_id, title, city, country_code, lat, lon, start_date, end_date, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [trip.id, owner, trip.title, trip.city, trip.countryCode, trip.lat, trip.lon,
                             trip.start?.description, trip.end?.description, now.timeIntervalSince1970])
        try addMember(tripID: trip.id, user: owner, role: .owner, now: now, in: db)
        return trip
    }

    func addMember(tripID: String, user: String, role: TripMember.Role, now: Date, in db: Database) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO trip_member (trip_id, user_id, role, joined_at) VALUES (?, ?, ?, ?)",
                       arguments: [tripID, user, role.rawValue, now.timeIntervalSince1970])
    }

    func removeMember(tripID: String, user: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM trip_member WHERE trip_id = ? AND user_id = ?", arguments: [tripID, user])
    }

    func deleteTrip(id: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM trip WHERE id = ?", arguments: [id])
    }

    func trip(id: String, withMembers: Bool, in db: Database) throws -> Trip? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM trip WHERE id = ?", arguments: [id]) else { return nil }
        var trip = Self.trip(row)
        if withMembers {
            trip.members = try Row.fetchAll(db, sql: """
                SELECT user_id, role, joined_at FROM trip_member WHERE trip_id = ? ORDER BY joined_at, user_id
                """, arguments: [id]).map {
                TripMember(userId: $0["user_id"], role: TripMember.Role(rawValue: $0["role"]) ?? .member,
                           joinedAt: Date(timeIntervalSince1970: $0["joined_at"]))
            }
        }
        return trip
    }

    func trip(id: String, withMembers: Bool) throws -> Trip? {
        try database.pool.read { db in try trip(id: id, withMembers: withMembers, in: db) }
    }

    /// The trips `user` owns or joined, soonest start first (undated last), then newest.
    func trips(of user: String) throws -> [Trip] {
        try database.pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT trip.* FROM trip JOIN trip_member ON trip_member.trip_id = trip.id
                WHERE trip_member.user_id = ?
                ORDER BY trip.start_date IS NULL, trip.start_date, trip.created_at DESC, trip.id
                """, arguments: [user]).map(Self.trip)
        }
    }

    func memberRole(tripID: String, user: String) throws -> TripMember.Role? {
        try database.pool.read { db in try memberRole(tripID: tripID, user: user, in: db) }
    }

    func memberRole(tripID: String, user: String, in db: Database) throws -> TripMember.Role? {
        try String.fetchOne(db, sql: "SELECT role FROM trip_member WHERE trip_id = ? AND user_id = ?", arguments: [tripID, user])
            .flatMap(TripMember.Role.init(rawValue:))
    }

    private static func trip(_ row: Row) -> Trip {
        Trip(id: row["id"], ownerId: row["owner_id"], title: row["title"], city: row["city"], countryCode: row["country_code"],
             lat: row["lat"], lon: row["lon"], start: (row["start_date"] as String?).flatMap(LocalDate.init),
             end: (row["end_date"] as String?).flatMap(LocalDate.init), createdAt: Date(timeIntervalSince1970: row["created_at"]))
    }
}
