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
        try db.execute(sql: "INSERT INTO trip_member (trip_id, user_id, role, joined_at) VALUES (?, ?, 'owner', ?)",
                       arguments: [trip.id, owner, now.timeIntervalSince1970])
        return trip
    }

    /// Invites `user` unless they are on the trip or invited already (an invitation is not renewed).
    func invite(tripID: String, user: String, now: Date, in db: Database) throws {
        try db.execute(sql: "INSERT OR IGNORE INTO trip_member (trip_id, user_id, role, invited_at) VALUES (?, ?, 'invited', ?)",
                       arguments: [tripID, user, now.timeIntervalSince1970])
    }

    /// An invited `user` becomes a member; anyone else's row is left as it is.
    func accept(tripID: String, user: String, now: Date, in db: Database) throws {
        try db.execute(sql: """
            UPDATE trip_member SET role = 'member', joined_at = ? WHERE trip_id = ? AND user_id = ? AND role = 'invited'
            """, arguments: [now.timeIntervalSince1970, tripID, user])
    }

    func removeMember(tripID: String, user: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM trip_member WHERE trip_id = ? AND user_id = ?", arguments: [tripID, user])
    }

    func deleteTrip(id: String, in db: Database) throws {
        try db.execute(sql: "DELETE FROM trip WHERE id = ?", arguments: [id])
    }

    /// The trip; with `withMembers` its members (those who joined first, then the invited) and, when `caller` is
    /// one of them, the caller's role.
    func trip(id: String, withMembers: Bool, caller: String? = nil, in db: Database) throws -> Trip? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM trip WHERE id = ?", arguments: [id]) else { return nil }
        var trip = Self.trip(row)
        if withMembers {
            let members = try Row.fetchAll(db, sql: """
                SELECT user_id, role, invited_at, joined_at FROM trip_member WHERE trip_id = ?
                ORDER BY joined_at IS NULL, joined_at, invited_at, user_id
                """, arguments: [id]).map {
                TripMember(userId: $0["user_id"], role: TripMember.Role(rawValue: $0["role"]) ?? .member,
                           invitedAt: ($0["invited_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
                           joinedAt: ($0["joined_at"] as Double?).map(Date.init(timeIntervalSince1970:)))
            }
            trip.members = members
            trip.role = members.first { $0.userId == caller }?.role
        }
        return trip
    }

    func trip(id: String, withMembers: Bool, caller: String? = nil) throws -> Trip? {
        try database.pool.read { db in try trip(id: id, withMembers: withMembers, caller: caller, in: db) }
    }

    /// The trips `user` owns, joined or is invited to (each with `user`'s role), soonest start first (undated
    /// last), then newest.
    func trips(of user: String) throws -> [Trip] {
        try database.pool.read { db in
            try Row.fetchAll(db, sql: """
                SELECT trip.*, trip_member.role AS caller_role FROM trip JOIN trip_member ON trip_member.trip_id = trip.id
                WHERE trip_member.user_id = ?
                ORDER BY trip.start_date IS NULL, trip.start_date, trip.created_at DESC, trip.id
                """, arguments: [user]).map { row in
                var trip = Self.trip(row)
                trip.role = TripMember.Role(rawValue: row["caller_role"])
                return trip
            }
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
