import Foundation

extension Hereabouts {
    public func createTrip(title: String, city: String, countryCode: String, start: String? = nil, end: String? = nil) async throws -> Trip {
        try await send {
            try await $0.createTrip(body: .json(.init(city: city, countryCode: countryCode, end: end, start: start, title: title)))
                .created.body.json.trip
        }
    }

    /// Invites a user to one of the signed-in user's trips: they are listed as `invited` until they accept.
    @discardableResult
    public func invite(_ userId: String, toTrip tripId: String) async throws -> Trip {
        try await send { try await $0.inviteToTrip(path: .init(id: tripId), body: .json(.init(userId: userId))).ok.body.json.trip }
    }

    /// The trips the signed-in user owns, joined or is invited to (`role == .invited`).
    public func trips() async throws -> [Trip] {
        try await send { try await $0.listTrips().ok.body.json.trips }
    }

    /// Accepts an invitation: the signed-in user becomes a member of the trip.
    @discardableResult
    public func acceptTrip(_ id: String) async throws -> Trip {
        try await send { try await $0.acceptTrip(path: .init(id: id)).ok.body.json.trip }
    }

    /// Leaves a trip, or declines an invitation to it.
    public func leaveTrip(_ id: String) async throws {
        try await send { _ = try await $0.leaveTrip(path: .init(id: id)).noContent }
    }

    public func trip(_ id: String) async throws -> Trip {
        try await send { try await $0.getTrip(path: .init(id: id)).ok.body.json.trip }
    }

    /// The trip as an iCalendar file (`text/calendar`), for the system calendar.
    public func tripCalendar(_ id: String) async throws -> String {
        try await send { client in
            let body = try await client.tripCalendar(path: .init(id: id)).ok.body.textCalendar
            return try await String(collecting: body, upTo: 1 << 20)
        }
    }
}
