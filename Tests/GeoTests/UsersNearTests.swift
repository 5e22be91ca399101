import Contracts
import Foundation
@testable import Geo
import ServiceKit
import Testing
import Wire

@Suite("geo.users.near, following auth")
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
}
