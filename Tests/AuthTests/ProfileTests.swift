import Contracts
import Foundation
import ServiceKitTesting
import TestThreads
import Testing
import Wire

@Suite("Profiles, avatars and locations", .ownThread)
struct ProfileTests {
    @Test("a profile update sets, clears and keeps fields, and replaces attributes")
    func profileUpdate() throws {
        let auth = try AuthFixture()
        let session = try auth.register(displayName: "Old", phone: "+31 20 123", attributes: ["dives": .number(10)])
        let updated = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(
            displayName: .set("Diver Dan"), phone: .cleared, attributes: .set(["years": .number(4)]),
            contact: ContactUpdate(showEmail: true)), token: session.accessToken).user
        #expect(updated.displayName == "Diver Dan")
        #expect(updated.phone == nil)
        #expect(updated.attributes == ["years": .number(4)])
        #expect(updated.contact == ContactVisibility(showEmail: true, showPhone: false))
        #expect(updated.email == session.user.email)

        let unchanged = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(), token: session.accessToken).user
        #expect(unchanged == updated)
    }

    @Test("public profiles show email and phone only where the owner chose to")
    func publicProfiles() throws {
        let auth = try AuthFixture()
        let shown = try auth.register("shown", phone: "+1 555 0100")
        let hidden = try auth.register("hidden", phone: "+1 555 0199")
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(contact: ContactUpdate(showEmail: true, showPhone: true)),
                                 token: shown.accessToken)
        let users = try auth.client.call(AuthAPI.usersGet, UsersGetRequest(ids: [hidden.user.id, "unknown-id", shown.user.id])).users
        #expect(users.map(\.id) == [hidden.user.id, shown.user.id])
        #expect(users[0].email == nil && users[0].phone == nil)
        #expect(users[1].email == "shown@example.org" && users[1].phone == "+1 555 0100")
    }

    @Test("users.get never shows a profile older than the last change, nor a deleted user")
    func usersGetIsCoherent() throws {
        let auth = try AuthFixture()
        let session = try auth.register(displayName: "First")
        let get = { try auth.client.call(AuthAPI.usersGet, UsersGetRequest(ids: [session.user.id, session.user.id])).users }
        #expect(try get().map(\.displayName) == ["First"])
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("Second")), token: session.accessToken)
        #expect(try get().map(\.displayName) == ["Second"])
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(contact: ContactUpdate(showEmail: true)), token: session.accessToken)
        #expect(try get().first?.email == session.user.email)
        _ = try auth.client.call(AuthAPI.delete, DeleteRequest(password: "correct horse battery"), token: session.accessToken)
        #expect(try get().isEmpty)
    }

    @Test("users.get refuses over 200 ids and ids of the wrong shape")
    func usersGetLimits() throws {
        let auth = try AuthFixture()
        #expect(auth.failure(AuthAPI.usersGet, UsersGetRequest(ids: (0..<201).map { "u\($0)" }))?.summary == "invalid_argument ids")
        #expect(auth.failure(AuthAPI.usersGet, UsersGetRequest(ids: ["ok", "not ok"]))?.summary == "invalid_argument ids[1]")
        #expect(try auth.client.call(AuthAPI.usersGet, UsersGetRequest(ids: [])).users.isEmpty)
    }

    @Test("users.lookup finds a user by email in any case, for registered callers, ten a minute")
    func usersLookup() throws {
        let auth = try AuthFixture()
        let buddy = try auth.register("buddy")
        let me = try auth.register("me")
        let found = try auth.client.call(AuthAPI.usersLookup, UsersLookupRequest(email: "BUDDY@example.org"), token: me.accessToken)
        #expect(found.user.id == buddy.user.id)
        #expect(found.user.email == nil)
        #expect(auth.failure(AuthAPI.usersLookup, UsersLookupRequest(email: "none@example.org"), token: me.accessToken)?.code == .notFound)
        #expect(auth.failure(AuthAPI.usersLookup, UsersLookupRequest(email: "buddy@example.org"))?.code == .unauthenticated)
        let anonymous = try auth.client.call(AuthAPI.anonymous, Empty())
        #expect(auth.failure(AuthAPI.usersLookup, UsersLookupRequest(email: "buddy@example.org"), token: anonymous.accessToken)?.code
                == .permissionDenied)
        // Two used; eight more in the burst, then the caller waits; another caller does not.
        for index in 0..<8 {
            _ = auth.failure(AuthAPI.usersLookup, UsersLookupRequest(email: "guess\(index)@example.org"), token: me.accessToken)
        }
        let limited = auth.failure(AuthAPI.usersLookup, UsersLookupRequest(email: "buddy@example.org"), token: me.accessToken)
        #expect(limited?.code == .rateLimited && (limited?.retryAfterMs ?? 0) > 1_000)
        #expect(try auth.client.call(AuthAPI.usersLookup, UsersLookupRequest(email: "buddy@example.org"), token: buddy.accessToken)
                .user.id == buddy.user.id)
    }

    @Test("an avatar is stored from frame 1 and served with its type", arguments: [
        (TestImages.png(width: 64, height: 48), "image/png"),
        (TestImages.jpeg, "image/jpeg"),
        (TestImages.webpLossy, "image/webp"),
    ])
    func avatar(image: Data, contentType: String) throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let user = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(), token: session.accessToken,
                                        attachments: [image]).user
        #expect(user.hasAvatar)
        let reply = try auth.client.callWithAttachments(AuthAPI.avatarGet, AvatarGetRequest(userId: user.id))
        #expect(reply.value.contentType == contentType)
        #expect(reply.attachments == [image])
        #expect(try auth.client.call(AuthAPI.usersGet, UsersGetRequest(ids: [user.id])).users.first?.hasAvatar == true)

        let removed = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(removeAvatar: true), token: session.accessToken)
        #expect(removed.user.hasAvatar == false)
        #expect(auth.failure(AuthAPI.avatarGet, AvatarGetRequest(userId: user.id))?.code == .notFound)
    }

    @Test("avatars are judged by their bytes", arguments: [
        (TestImages.html, "invalid_argument avatar"),
        (TestImages.decompressionBomb, "too_large"),
        (TestImages.overflowingPNG, "too_large"),
        (TestImages.oversizedPNG(bytes: 6 * 1024 * 1024), "too_large"),
    ])
    func badAvatars(data: Data, expected: String) throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let error = auth.failure(AuthAPI.profileUpdate, ProfileUpdateRequest(), token: session.accessToken, attachments: [data])
        #expect(error?.summary == expected)
        #expect(try auth.client.call(AuthAPI.me, Empty(), token: session.accessToken).user.hasAvatar == false)
    }

    @Test("a profile update takes one frame after frame 0, not two")
    func twoAvatars() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let error = auth.failure(AuthAPI.profileUpdate, ProfileUpdateRequest(), token: session.accessToken,
                                 attachments: [TestImages.jpeg, TestImages.jpeg])
        #expect(error?.code == .badRequest)
    }

    @Test("an avatar from a phone is kept and served without the position in its EXIF")
    func avatarMetadata() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(), token: session.accessToken,
                                 attachments: [TestImages.jpegWithLocation])
        let served = try #require(try auth.client.callWithAttachments(AuthAPI.avatarGet, AvatarGetRequest(userId: session.user.id))
            .attachments.first)
        #expect(served.range(of: Data("GPS".utf8)) == nil && served.range(of: Data("PhoneMaker".utf8)) == nil)
        #expect(served.count < TestImages.jpegWithLocation.count)
    }

    @Test("a location is saved, and reaches the feed only while discoverable")
    func location() throws {
        let auth = try AuthFixture()
        let session = try auth.register()
        let hidden = try auth.client.call(AuthAPI.locationSet, LocationSetRequest(lat: 51.44, lon: 3.57), token: session.accessToken)
        #expect(hidden.user.location == UserLocation(lat: 51.44, lon: 3.57, discoverable: false))
        #expect(try auth.changes().last?.user?.location == nil)

        let shown = try auth.client.call(AuthAPI.locationSet, LocationSetRequest(lat: 51.5, lon: 3.6, discoverable: true),
                                         token: session.accessToken)
        // The owner sees the home as saved; followers only its 500 m cell.
        #expect(shown.user.location == UserLocation(lat: 51.5, lon: 3.6, discoverable: true))
        let fed = try #require(try auth.changes().last?.user?.location)
        let cell = HomeGrid.snap(lat: 51.5, lon: 3.6)
        #expect(fed == UserLocation(lat: cell.lat, lon: cell.lon, discoverable: true))
        #expect(fed != shown.user.location)
        #expect(GeoRules.distance(lat1: 51.5, lon1: 3.6, lat2: fed.lat, lon2: fed.lon) < HomeGrid.cellSize)
        // A move within the cell tells followers nothing new.
        let before = try auth.changes().count
        _ = try auth.client.call(AuthAPI.locationSet, LocationSetRequest(lat: 51.5001, lon: 3.6001, discoverable: true),
                                 token: session.accessToken)
        #expect(try auth.changes().count == before)

        #expect(auth.failure(AuthAPI.locationSet, LocationSetRequest(lat: 91, lon: 0), token: session.accessToken)?.summary == "invalid_argument lat")
        #expect(auth.failure(AuthAPI.locationSet, LocationSetRequest(lat: 0, lon: -180.5), token: session.accessToken)?.summary == "invalid_argument lon")
    }
}

@Suite("Deleting an account and the change feed", .ownThread)
struct DeleteAndFeedTests {
    @Test("delete needs the password, then the user is gone for good")
    func delete() throws {
        let auth = try AuthFixture()
        let session = try auth.register("leaving")
        #expect(auth.failure(AuthAPI.delete, DeleteRequest(password: "wrong"), token: session.accessToken)?.code == .unauthenticated)
        #expect(auth.failure(AuthAPI.delete, DeleteRequest(password: nil), token: session.accessToken)?.summary == "invalid_argument password")
        _ = try auth.client.call(AuthAPI.delete, DeleteRequest(password: "correct horse battery"), token: session.accessToken)

        #expect(auth.failure(AuthAPI.me, Empty(), token: session.accessToken)?.code == .unauthenticated)
        #expect(auth.failure(AuthAPI.login, LoginRequest(login: "leaving@example.org", password: "correct horse battery"))?.code == .unauthenticated)
        #expect(try auth.client.call(AuthAPI.usersGet, UsersGetRequest(ids: [session.user.id])).users.isEmpty)
        let last = try #require(try auth.changes().last)
        #expect(last.type == .deleted && last.userId == session.user.id && last.user == nil)
        // The address is free again.
        #expect(try auth.register("leaving").user.id != session.user.id)
    }

    @Test("an anonymous user deletes without a password")
    func anonymousDelete() throws {
        let auth = try AuthFixture()
        let session = try auth.client.call(AuthAPI.anonymous, Empty())
        _ = try auth.client.call(AuthAPI.delete, DeleteRequest(password: nil), token: session.accessToken)
        #expect(auth.failure(AuthAPI.me, Empty(), token: session.accessToken)?.code == .unauthenticated)
    }

    @Test("the feed keeps only each user's latest change, in seq order, and pages by after and limit")
    func feed() throws {
        let auth = try AuthFixture()
        let a = try auth.register("a")
        let b = try auth.register("b")
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("A2")), token: a.accessToken)
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(displayName: .set("A3")), token: a.accessToken)
        // A change others cannot see is not announced.
        _ = try auth.client.call(AuthAPI.profileUpdate, ProfileUpdateRequest(firstName: .set("Private")), token: b.accessToken)

        let changes = try auth.changes()
        #expect(changes.map(\.userId) == [b.user.id, a.user.id])
        #expect(changes.last?.user?.profile.displayName == "A3")
        #expect(changes.map(\.seq) == changes.map(\.seq).sorted())

        let firstPage = try auth.client.call(AuthAPI.changes, ChangesRequest(after: 0, limit: 1))
        #expect(firstPage.changes.count == 1 && firstPage.lastSeq == changes[0].seq)
        let rest = try auth.client.call(AuthAPI.changes, ChangesRequest(after: firstPage.lastSeq, limit: 10))
        #expect(rest.changes.map(\.userId) == [a.user.id])
        let end = try auth.client.call(AuthAPI.changes, ChangesRequest(after: rest.lastSeq, limit: 10))
        #expect(end.changes.isEmpty && end.lastSeq == rest.lastSeq)
    }
}
