import Foundation

extension Hereabouts {
    public func createTrip(title: String, city: String, countryCode: String, start: String? = nil, end: String? = nil) async throws -> Trip {
        try await send {
            try await $0.createTrip(body: .json(.init(city: city, countryCode: countryCode, end: end, start: start, title: title)))
                .created.body.json.trip
        }
    }

    /// Adds a user to one of the signed-in user's trips.
    @discardableResult
    public func invite(_ userId: String, toTrip tripId: String) async throws -> Trip {
        try await send { try await $0.inviteToTrip(path: .init(id: tripId), body: .json(.init(userId: userId))).ok.body.json.trip }
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
