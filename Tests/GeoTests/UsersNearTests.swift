import Contracts
import Foundation
@testable import Geo
import ServiceKit
import TestThreads
import Testing
import Wire

@Suite("geo.users.near, following auth", .ownThread)
struct UsersNearTests {
    @Test("discoverable homes are found in 500 m bands with attribute filters; private, moved and deleted users are not")
    func usersNear() throws {
        let geo = try GeoFixture()
        let me = try geo.user(), ann = try geo.user(), bob = try geo.user(), cid = try geo.user(), dee = try geo.user()
        func home(_ user: (token: String, id: String), _ lat: Double, _ lon: Double, discoverable: Bool = true) throws {
            _ = try geo.authClient.call(AuthAPI.locationSet, LocationSetRequest(lat: lat, lon: lon, discoverable: discoverable), token: user.token)
        }
        try home(me, 51.50, 3.60)
        try home(ann, 51.5030, 3.6000)   // about 334 m: the first band
        try home(bob, 51.5100, 3.6000)   // about 1.1 km
        try home(cid, 51.5050, 3.6000, discoverable: false)
        try home(dee, 52.50, 3.60)       // about 111 km
        _ = try geo.authClient.call(AuthAPI.profileUpdate, ProfileUpdateRequest(attributes: .set(["certification": .string("AOWD"), "dives": .number(120)])),
                                    token: bob.token)
        try geo.catchUpWithAuth()

        func near(_ radius: Double, attributes: Attributes? = nil, token: String? = nil) throws -> [NearUser] {
            try geo.client.call(GeoAPI.usersNear, UsersNearRequest(lat: 51.50, lon: 3.60, radius: radius, attributes: attributes),
                                token: token ?? me.token).users
        }
        #expect(try near(5_000) == [NearUser(userId: ann.id, distance: 500), NearUser(userId: bob.id, distance: 1_500)])
        #expect(try near(200_000).map(\.userId) == [ann.id, bob.id, dee.id])
        #expect(try near(200_000).last?.distance == 111_500)
        #expect(try near(5_000, attributes: ["certification": .string("AOWD")]).map(\.userId) == [bob.id])
        #expect(try near(5_000, attributes: ["dives": .number(120), "certification": .string("AOWD")]).map(\.userId) == [bob.id])
        #expect(try near(5_000, attributes: ["dives": .number(12)]).isEmpty)
        // The caller is left out of their own search (and "me" lives at the centre: the first band).
        #expect(try near(5_000, token: ann.token) == [NearUser(userId: me.id, distance: 500), NearUser(userId: bob.id, distance: 1_500)])

        // Made private, moved away, deleted: each leaves the answers.
        try home(ann, 51.50, 3.60, discoverable: false)
        try home(bob, 10, 10)
        _ = try geo.authClient.call(AuthAPI.delete, DeleteRequest(password: "correct horse battery"), token: dee.token)
        try geo.catchUpWithAuth()
        #expect(try near(200_000).isEmpty)
        #expect(try geo.client.call(GeoAPI.stats, Empty()).users == 2)  // me, and bob far away

        // A deleted user's token is refused; no token at all is unauthenticated too.
        #expect(geo.failure(GeoAPI.usersNear, UsersNearRequest(lat: 0, lon: 0, radius: 10), token: dee.token)?.code == .unauthenticated)
        #expect(geo.failure(GeoAPI.usersNear, UsersNearRequest(lat: 0, lon: 0, radius: 10))?.code == .unauthenticated)

        // What geo learned survives a restart.
        try geo.restartGeo()
        #expect(try geo.client.call(GeoAPI.stats, Empty()).users == 2)
        #expect(geo.failure(GeoAPI.usersNear, UsersNearRequest(lat: 0, lon: 0, radius: 10), token: dee.token)?.code == .unauthenticated)
    }

    @Test("trilateration by moving the centre finds a home's 500 m cell and nothing finer, however many accounts ask")
    func trilateration() throws {
        let geo = try GeoFixture()
        // Two neighbours in one cell: one ~280 m from its centre, one ~100 m the other way.
        let cell = HomeGrid.snap(lat: 51.5, lon: 3.6)
        let metresPerDegree = GeoRules.earthRadius * .pi / 180
        func offset(_ north: Double, _ east: Double) -> (lat: Double, lon: Double) {
            (cell.lat + north / metresPerDegree, cell.lon + east / (metresPerDegree * cos(cell.lat * .pi / 180)))
        }
        let homes = [offset(200, 200), offset(-70, -70)]
        var victims: [String] = []
        for home in homes {
            #expect(HomeGrid.snap(lat: home.lat, lon: home.lon) == cell, "the test's homes share a cell")
            let victim = try geo.user()
            _ = try geo.authClient.call(AuthAPI.locationSet, LocationSetRequest(lat: home.lat, lon: home.lon, discoverable: true),
                                        token: victim.token)
            victims.append(victim.id)
        }
        try geo.catchUpWithAuth()

        // The attacker opens accounts as the rate limit runs out: it slows, it does not stop.
        var attackers = [try geo.user()]
        var queries = 0
        func finds(_ victim: String, from point: (lat: Double, lon: Double), radius: Double) throws -> Bool {
            while true {
                queries += 1
                do {
                    return try geo.client.call(GeoAPI.usersNear, UsersNearRequest(lat: point.lat, lon: point.lon, radius: radius),
                                               token: attackers.last!.token).users.contains { $0.userId == victim }
                } catch let error as ServiceError where error.code == .rateLimited {
                    attackers.append(try geo.user())
                }
            }
        }
        /// The classic attack on distance filters: a disk of radius 3 km, slid along
        /// three rays from a guess until the victim just drops out, puts the three
        /// centres exactly 3 km from the home the filter measures to; that home is their
        /// circumcentre.
        func locate(_ victim: String) throws -> (lat: Double, lon: Double) {
            let guess = offset(600, -400), radius = 3_000.0
            var boundary: [(x: Double, y: Double)] = []
            for bearing in [0.0, 2 * .pi / 3, 4 * .pi / 3] {
                var inside = 0.0, outside = 6_000.0
                while outside - inside > 0.05 {
                    let t = (inside + outside) / 2
                    let centre = (lat: guess.lat + t * cos(bearing) / metresPerDegree,
                                  lon: guess.lon + t * sin(bearing) / (metresPerDegree * cos(guess.lat * .pi / 180)))
                    if try finds(victim, from: centre, radius: radius) { inside = t } else { outside = t }
                }
                boundary.append((inside * sin(bearing), inside * cos(bearing)))
            }
            // Circumcentre of the three points, in metres east and north of the guess.
            let (a, b, c) = (boundary[0], boundary[1], boundary[2])
            let d = 2 * (a.x * (b.y - c.y) + b.x * (c.y - a.y) + c.x * (a.y - b.y))
            func square(_ p: (x: Double, y: Double)) -> Double { p.x * p.x + p.y * p.y }
            let x = (square(a) * (b.y - c.y) + square(b) * (c.y - a.y) + square(c) * (a.y - b.y)) / d
            let y = (square(a) * (c.x - b.x) + square(b) * (a.x - c.x) + square(c) * (b.x - a.x)) / d
            return (guess.lat + y / metresPerDegree, guess.lon + x / (metresPerDegree * cos(guess.lat * .pi / 180)))
        }

        let found = try victims.map(locate)
        for (estimate, home) in zip(found, homes) {
            let toHome = GeoRules.distance(lat1: estimate.lat, lon1: estimate.lon, lat2: home.lat, lon2: home.lon)
            let toCell = GeoRules.distance(lat1: estimate.lat, lon1: estimate.lon, lat2: cell.lat, lon2: cell.lon)
            let homeToCell = GeoRules.distance(lat1: home.lat, lon1: home.lon, lat2: cell.lat, lon2: cell.lon)
            // What the attack pins down is the cell's centre: as far from the home as the home is from it.
            #expect(toCell < 10, "the attack found the cell (\(toCell) m off its centre)")
            #expect(toHome > homeToCell - 10, "the attack got within \(toHome) m of a home \(homeToCell) m from its cell's centre")
        }
        #expect(found[0].lat.distance(to: found[1].lat).magnitude < 1e-4 && found[0].lon.distance(to: found[1].lon).magnitude < 1e-4,
                "two homes in one cell look the same")
        #expect(attackers.count > 2, "the per-caller limit held \(queries) queries to \(attackers.count) accounts")
    }
}
