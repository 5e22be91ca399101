import Contracts
import Foundation
import Mail
import ServiceClient
import ServiceKitTesting
import TestThreads
import Testing
import Wire

@Suite("HEREABOUTS_REQUIRE_VERIFIED_EMAIL=writes", .ownThread)
struct ConfirmedEmailTests {
    @Test("a registered user posts, edits and rates once auth's feed says the address is confirmed; reads stay open; off by default")
    func writesNeedAConfirmedAddress() throws {
        let fixture = try CatalogueFixture(environment: ["HEREABOUTS_REQUIRE_VERIFIED_EMAIL": "writes"])
        let user = try fixture.user("pending")
        try fixture.catchUpWithAuth()
        let draft = PostDraft(kind: "offer", title: "Lamp", lat: 52.09, lon: 5.12)
        let refused = fixture.failure(CatalogueAPI.create, CreatePostRequest(draft), token: user.token)
        #expect(refused?.code == .permissionDenied && refused?.message.contains("confirm your email address") == true, "\(String(describing: refused))")
        #expect(fixture.failure(CatalogueAPI.importPosts, ImportPostsRequest(posts: [draft]), token: user.token)?.code == .permissionDenied)

        // Confirmed with the link auth mailed (the mail drop: no relay here).
        let folder = fixture.stack.directory.appendingPathComponent("mail")
        var token: String?
        for _ in 0..<200 where token == nil {
            let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".eml") }
            token = files.compactMap { try? String(contentsOf: folder.appendingPathComponent($0), encoding: .utf8) }.map(ReadMail.init)
                .first { $0.to.hasPrefix("pending") }?.links.first
                .flatMap { URLComponents(string: $0)?.queryItems?.first { $0.name == "token" }?.value }
            if token == nil { Thread.sleep(forTimeInterval: 0.05) }
        }
        _ = try fixture.authClient.call(AuthAPI.emailVerify, EmailTokenRequest(token: try #require(token)))
        try fixture.catchUpWithAuth()
        let post = try fixture.create(draft, token: user.token)
        _ = try fixture.client.call(CatalogueAPI.rate, SetRatingRequest(postId: post.id, stars: 4), token: user.token)
        // Reads are anyone's, confirmed or not.
        let other = try fixture.user("reader")
        try fixture.catchUpWithAuth()
        #expect(try fixture.client.call(CatalogueAPI.get, IDRequest(id: post.id), token: other.token).post.id == post.id)
        #expect(fixture.failure(CatalogueAPI.rate, SetRatingRequest(postId: post.id, stars: 2), token: other.token)?.code == .permissionDenied)

        // Without the setting, nothing changes.
        let open = try CatalogueFixture()
        let fresh = try open.user("fresh")
        try open.catchUpWithAuth()
        _ = try open.create(draft, token: fresh.token)
    }
}
