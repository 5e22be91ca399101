@testable import Catalogue
import Contracts
import Foundation
import GRDB
import TestThreads
import Testing
import Wire

@Suite("Trips", .ownThread)
struct TripTests {
    @Test("a trip is created, listed for its owner and invitees, and shown to members only")
    func tripFlow() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let buddy = try catalogue.user()
        let stranger = try catalogue.user()
        let trip = try catalogue.client.call(CatalogueAPI.createTrip, CreateTripRequest(
            title: "Lisbon in spring", city: "Lisbon", countryCode: "pt", lat: 38.72, lon: -9.14,
            start: LocalDate("2027-04-02"), end: LocalDate("2027-04-09")), token: owner.token).trip
        #expect(trip.countryCode == "PT")
        #expect(trip.members?.map(\.userId) == [owner.id])
        try catalogue.catchUpWithAuth()

        let invited = try catalogue.client.call(CatalogueAPI.invite, InviteRequest(id: trip.id, userId: buddy.id), token: owner.token).trip
        #expect(Set(invited.members?.map(\.userId) ?? []) == [owner.id, buddy.id])
        #expect(invited.members?.first { $0.userId == buddy.id }?.role == .invited)
        // Inviting again changes nothing.
        #expect(try catalogue.client.call(CatalogueAPI.invite, InviteRequest(id: trip.id, userId: buddy.id), token: owner.token).trip.members?.count == 2)

        #expect(try catalogue.client.call(CatalogueAPI.listTrips, Empty(), token: buddy.token).trips.map(\.id) == [trip.id])
        #expect(try catalogue.client.call(CatalogueAPI.getTrip, IDRequest(id: trip.id), token: buddy.token).trip.title == "Lisbon in spring")
        #expect(catalogue.failure(CatalogueAPI.getTrip, IDRequest(id: trip.id), token: stranger.token)?.code == .permissionDenied)
        #expect(try catalogue.client.call(CatalogueAPI.listTrips, Empty(), token: stranger.token).trips.isEmpty)
    }

    @Test("trips.list over the socket: the soonest start first, undated trips last, ties and undated by newest")
    func listOrder() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        func trip(_ title: String, start: String?) throws -> String {
            try catalogue.client.call(CatalogueAPI.createTrip, CreateTripRequest(
                title: title, city: "Rome", countryCode: "IT", start: start.map { LocalDate($0)! },
                end: start.map { LocalDate($0)! }), token: owner.token).trip.id
            }
        // Made in an order that is none of the answers.
        let undatedOld = try trip("undated, older", start: nil)
        let late = try trip("late", start: "2027-09-01")
        let soonOld = try trip("soon, older", start: "2027-03-01")
        let undatedNew = try trip("undated, newer", start: nil)
        let soonNew = try trip("soon, newer", start: "2027-03-01")
        let middle = try trip("middle", start: "2027-05-15")
        let listed = try catalogue.client.call(CatalogueAPI.listTrips, Empty(), token: owner.token).trips
        #expect(listed.map(\.id) == [soonNew, soonOld, middle, late, undatedNew, undatedOld],
                "\(listed.map(\.title))")
        #expect(listed.allSatisfy { $0.members == nil })
    }

    @Test("an invited buddy sees the trip, is on it only after accepting, and may decline")
    func invitations() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let buddy = try catalogue.user()
        let other = try catalogue.user()
        let stranger = try catalogue.user()
        let trip = try catalogue.client.call(CatalogueAPI.createTrip, CreateTripRequest(title: "Rome", city: "Rome", countryCode: "IT"),
                                             token: owner.token).trip
        #expect(trip.role == .owner)
        #expect(trip.members?.first?.invitedAt == nil && trip.members?.first?.joinedAt != nil)
        try catalogue.catchUpWithAuth()
        let invited = try catalogue.client.call(CatalogueAPI.invite, InviteRequest(id: trip.id, userId: buddy.id), token: owner.token).trip
        let asked = try #require(invited.members?.first { $0.userId == buddy.id })
        #expect(asked.role == .invited && asked.joinedAt == nil && asked.invitedAt != nil)
        _ = try catalogue.client.call(CatalogueAPI.invite, InviteRequest(id: trip.id, userId: other.id), token: owner.token)

        // The invitation is in the buddy's list and readable; it is not membership.
        #expect(try catalogue.client.call(CatalogueAPI.listTrips, Empty(), token: buddy.token).trips.map(\.role) == [.invited])
        #expect(try catalogue.client.call(CatalogueAPI.getTrip, IDRequest(id: trip.id), token: buddy.token).trip.role == .invited)
        #expect(catalogue.failure(CatalogueAPI.acceptTrip, IDRequest(id: trip.id), token: stranger.token)?.code == .permissionDenied)
        #expect(catalogue.failure(CatalogueAPI.acceptTrip, IDRequest(id: "no-trip"), token: buddy.token)?.code == .notFound)

        let accepted = try catalogue.client.call(CatalogueAPI.acceptTrip, IDRequest(id: trip.id), token: buddy.token).trip
        #expect(accepted.role == .member)
        let joined = try #require(accepted.members?.first { $0.userId == buddy.id })
        #expect(joined.role == .member && joined.joinedAt != nil && joined.invitedAt == asked.invitedAt)
        // Members come before the invited; accepting again changes nothing.
        #expect(accepted.members?.map(\.userId) == [owner.id, buddy.id, other.id])
        #expect(try catalogue.client.call(CatalogueAPI.acceptTrip, IDRequest(id: trip.id), token: buddy.token).trip == accepted)
        // Inviting a member again does not make them invited again.
        let again = try catalogue.client.call(CatalogueAPI.invite, InviteRequest(id: trip.id, userId: buddy.id), token: owner.token).trip
        #expect(again.members?.first { $0.userId == buddy.id }?.role == .member)

        // Declining leaves nothing behind.
        _ = try catalogue.client.call(CatalogueAPI.leaveTrip, IDRequest(id: trip.id), token: other.token)
        #expect(try catalogue.client.call(CatalogueAPI.listTrips, Empty(), token: other.token).trips.isEmpty)
        #expect(try catalogue.client.call(CatalogueAPI.getTrip, IDRequest(id: trip.id), token: owner.token).trip.members?.count == 2)
    }

    @Test("only the owner invites and deletes; members leave; the owner cannot leave")
    func tripRules() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let buddy = try catalogue.user()
        let third = try catalogue.user()
        let trip = try catalogue.client.call(CatalogueAPI.createTrip, CreateTripRequest(title: "Rome", city: "Rome", countryCode: "IT"),
                                             token: owner.token).trip
        try catalogue.catchUpWithAuth()
        _ = try catalogue.client.call(CatalogueAPI.invite, InviteRequest(id: trip.id, userId: buddy.id), token: owner.token)
        #expect(catalogue.failure(CatalogueAPI.invite, InviteRequest(id: trip.id, userId: third.id), token: buddy.token)?.code == .permissionDenied)
        #expect(catalogue.failure(CatalogueAPI.invite, InviteRequest(id: trip.id, userId: owner.id), token: owner.token)?.summary == "invalid_argument userId")
        #expect(catalogue.failure(CatalogueAPI.invite, InviteRequest(id: trip.id, userId: "nobody-here"), token: owner.token)?.code == .notFound)
        #expect(catalogue.failure(CatalogueAPI.invite, InviteRequest(id: "no-trip", userId: third.id), token: owner.token)?.code == .notFound)
        #expect(catalogue.failure(CatalogueAPI.leaveTrip, IDRequest(id: trip.id), token: owner.token)?.code == .permissionDenied)
        #expect(catalogue.failure(CatalogueAPI.deleteTrip, IDRequest(id: trip.id), token: buddy.token)?.code == .permissionDenied)

        _ = try catalogue.client.call(CatalogueAPI.leaveTrip, IDRequest(id: trip.id), token: buddy.token)
        #expect(catalogue.failure(CatalogueAPI.getTrip, IDRequest(id: trip.id), token: buddy.token)?.code == .permissionDenied)
        _ = try catalogue.client.call(CatalogueAPI.deleteTrip, IDRequest(id: trip.id), token: owner.token)
        #expect(catalogue.failure(CatalogueAPI.getTrip, IDRequest(id: trip.id), token: owner.token)?.code == .notFound)
    }

    @Test("a file from before invitations keeps its members as members, joined when they were added")
    func membersCarriedOver() throws {
        let queue = try DatabaseQueue()
        var migrator = DatabaseMigrator()
        CatalogueSchema.register(in: &migrator)
        try migrator.migrate(queue, upTo: "catalogue-1")
        try queue.write { db in
            try db.execute(sql: """
                INSERT INTO trip (id, owner_id, title, city, country_code, created_at) VALUES ('t', 'ann', 'Rome', 'Rome', 'IT', 10);
                INSERT INTO trip_member (trip_id, user_id, role, joined_at) VALUES ('t', 'ann', 'owner', 10), ('t', 'bob', 'member', 20);
                """)
        }
        try migrator.migrate(queue)
        let rows = try queue.read { db in
            try Row.fetchAll(db, sql: "SELECT user_id, role, invited_at, joined_at FROM trip_member ORDER BY user_id")
        }
        #expect(rows.map { [$0["user_id"], $0["role"]] as [String] } == [["ann", "owner"], ["bob", "member"]])
        #expect(rows.map { $0["joined_at"] as Double? } == [10, 20] && rows.allSatisfy { ($0["invited_at"] as Double?) == nil })
        // The index on members by user survived the table's rebuild.
        #expect(try queue.read { db in try db.indexes(on: "trip_member").map(\.name) }.contains("trip_member_user"))
    }

    @Test("trip fields follow the rules", arguments: [
        (CreateTripRequest(title: "", city: "Rome", countryCode: "IT"), "title"),
        (CreateTripRequest(title: "x", city: "Rome", countryCode: "ITA"), "countryCode"),
        (CreateTripRequest(title: "x", city: "Rome", countryCode: "IT", lat: 41.9), "lon"),
        (CreateTripRequest(title: "x", city: "Rome", countryCode: "IT", start: LocalDate("2027-05-02"), end: LocalDate("2027-05-01")), "end"),
    ])
    func tripValidation(request: CreateTripRequest, field: String) throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        #expect(catalogue.failure(CatalogueAPI.createTrip, request, token: owner.token)?.summary == "invalid_argument \(field)")
    }
}
