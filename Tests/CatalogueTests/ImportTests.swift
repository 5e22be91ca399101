import Contracts
import GRDB
import Foundation
import Imaging
import TestThreads
import Testing
import ServiceKitTesting
import Wire
@testable import Catalogue

@Suite("Importing a feed", .ownThread)
struct ImportTests {
    private func feed(_ count: Int, text: String = "") -> [PostDraft] {
        (0..<count).map { index in
            PostDraft(kind: "restaurant", title: "Venue \(index)", text: text, lat: 52 + Double(index) / 1000, lon: 4.9,
                      tags: ["pizza"], hours: "Mo-Su 12:00-23:00", timezone: "Europe/Amsterdam", ref: "feed-\(index)")
        }
    }

    @Test("import creates, updates by ref, and leaves an unchanged feed alone")
    func upsert() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let first = try catalogue.client.call(CatalogueAPI.importPosts, ImportPostsRequest(posts: feed(50)), token: owner.token)
        #expect(first.created == 50 && first.updated == 0 && first.unchanged == 0)
        #expect(first.ids.count == 50)
        let feedAfterFirst = try catalogue.changes()
        #expect(feedAfterFirst.count == 50)

        // Unchanged: no versions, no feed entries.
        let again = try catalogue.client.call(CatalogueAPI.importPosts, ImportPostsRequest(posts: feed(50)), token: owner.token)
        #expect(again.ids == first.ids)
        #expect(again.created == 0 && again.updated == 0 && again.unchanged == 50)
        #expect(try catalogue.changes().map(\.seq) == feedAfterFirst.map(\.seq))

        // Two changed, one new; the rest untouched.
        var changed = feed(51)
        changed[3].title = "Venue 3, renamed"
        changed[7].hours = "Mo-Su 12:00-22:00"
        let third = try catalogue.client.call(CatalogueAPI.importPosts, ImportPostsRequest(posts: changed), token: owner.token)
        #expect(third.created == 1 && third.updated == 2 && third.unchanged == 48)
        #expect(Array(third.ids.prefix(50)) == first.ids)
        let renamed = try catalogue.client.call(CatalogueAPI.get, IDRequest(id: first.ids[3])).post
        #expect(renamed.title == "Venue 3, renamed" && renamed.version == 2)
        #expect(try catalogue.client.call(CatalogueAPI.get, IDRequest(id: first.ids[4])).post.version == 1)
        #expect(try catalogue.changes().count == 51)
    }

    enum Mistake: String, CaseIterable, Sendable {
        case missingRef, repeatedRef, badTitle, badHours, badZone

        func apply(to posts: inout [PostDraft]) {
            switch self {
            case .missingRef: posts[2].ref = nil
            case .repeatedRef: posts[4].ref = posts[1].ref
            case .badTitle: posts[3].title = ""
            case .badHours: posts[1].hours = "sometimes"
            case .badZone: posts[0].timezone = "Nowhere/Land"
            }
        }

        var field: String {
            switch self {
            case .missingRef: "posts[2].ref"
            case .repeatedRef: "posts[4].ref"
            case .badTitle: "posts[3].title"
            case .badHours: "posts[1].hours"
            case .badZone: "posts[0].timezone"
            }
        }
    }

    @Test("an import's mistakes name the post and field, and nothing of it is kept", arguments: Mistake.allCases)
    func mistakes(_ mistake: Mistake) throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        var posts = feed(5)
        mistake.apply(to: &posts)
        let error = catalogue.failure(CatalogueAPI.importPosts, ImportPostsRequest(posts: posts), token: owner.token)
        #expect(error?.summary == "invalid_argument \(mistake.field)", "\(error?.message ?? "accepted")")
        #expect(try catalogue.changes().isEmpty)
    }

    @Test("an import holds 1–1,000 posts, and may be up to 1 MiB")
    func size() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        #expect(catalogue.failure(CatalogueAPI.importPosts, ImportPostsRequest(posts: []), token: owner.token)?.summary == "invalid_argument posts")
        #expect(catalogue.failure(CatalogueAPI.importPosts, ImportPostsRequest(posts: feed(1001)), token: owner.token)?.summary == "invalid_argument posts")
        // About 600 KiB of frame 0: over the usual 256 KiB, inside the import's 1 MiB.
        let long = feed(1000, text: String(repeating: "x", count: 400))
        let reply = try catalogue.client.call(CatalogueAPI.importPosts, ImportPostsRequest(posts: long), token: owner.token)
        #expect(reply.created == 1000)
    }
}

@Suite("Images", .ownThread)
struct ImageTests {
    @Test("an owner adds real JPEG, PNG and WebP images; their type and size come from the bytes")
    func addAndGet() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let post = try catalogue.create(.sample(), token: owner.token)
        let files = [TestImages.jpeg, TestImages.png(width: 40, height: 30), TestImages.webpLossless]
        var images: [PostImage] = []
        for file in files {
            images.append(try catalogue.client.call(CatalogueAPI.addImage, AddImageRequest(postId: post.id), token: owner.token,
                                                    attachments: [file]).image)
        }
        #expect(images.map(\.contentType) == ["image/jpeg", "image/png", "image/webp"])
        #expect(images[1].width == 40 && images[1].height == 30 && images[1].bytes == files[1].count)
        let stored = try catalogue.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post
        #expect(stored.images == images)
        #expect(stored.version == 4)
        let fetched = try catalogue.client.callWithAttachments(CatalogueAPI.getImage, IDRequest(id: images[2].id))
        #expect(fetched.value.image == images[2])
        #expect(fetched.attachments == [files[2]])

        _ = try catalogue.client.call(CatalogueAPI.deleteImage, IDRequest(id: images[0].id), token: owner.token)
        let after = try catalogue.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post
        #expect(after.images == Array(images.dropFirst()))
        #expect(after.version == 5)
        #expect(catalogue.failure(CatalogueAPI.getImage, IDRequest(id: images[0].id))?.code == .notFound)
    }

    @Test("a phone's photo is served without its position, with its orientation, at the size stored", arguments: [
        (TestImages.jpegWithLocation, ImageInfo.Format.jpeg), (TestImages.pngWithLocation, .png), (TestImages.webpWithLocation, .webp),
    ])
    func metadataTakenOut(photo: Data, format: ImageInfo.Format) throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let post = try catalogue.create(.sample(), token: owner.token)
        let image = try catalogue.client.call(CatalogueAPI.addImage, AddImageRequest(postId: post.id), token: owner.token,
                                              attachments: [photo]).image
        let served = try #require(try catalogue.client.callWithAttachments(CatalogueAPI.getImage, IDRequest(id: image.id)).attachments.first)
        for secret in ["GPS", "PhoneMaker", "xmpmeta", "taken at home"] {
            #expect(served.range(of: Data(secret.utf8)) == nil, "\(format) still holds \(secret)")
        }
        #expect(ImageMetadata.orientation(served, format: format) == 6)
        #expect(image.bytes == served.count && served.count < photo.count)
        #expect((image.width, image.height) == (8, 6))
    }

    @Test("images are judged by their bytes", arguments: [
        (TestImages.html, "invalid_argument image"),
        (TestImages.decompressionBomb, "too_large"),
        (TestImages.overflowingPNG, "too_large"),
        (TestImages.oversizedPNG(bytes: 6 * 1024 * 1024), "too_large"),
    ])
    func refused(data: Data, expected: String) throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let post = try catalogue.create(.sample(), token: owner.token)
        #expect(catalogue.failure(CatalogueAPI.addImage, AddImageRequest(postId: post.id), token: owner.token, attachments: [data])?.summary == expected)
        #expect(try catalogue.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post.images.isEmpty)
    }

    @Test("a post keeps at most 10 images; only its owner adds or removes them")
    func limitsAndOwnership() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let other = try catalogue.user()
        let post = try catalogue.create(.sample(), token: owner.token)
        let png = TestImages.png(width: 2, height: 2)
        #expect(catalogue.failure(CatalogueAPI.addImage, AddImageRequest(postId: post.id), token: other.token, attachments: [png])?.code == .permissionDenied)
        #expect(catalogue.failure(CatalogueAPI.addImage, AddImageRequest(postId: post.id), token: owner.token)?.summary == "invalid_argument image")
        var last: PostImage?
        for _ in 0..<10 {
            last = try catalogue.client.call(CatalogueAPI.addImage, AddImageRequest(postId: post.id), token: owner.token, attachments: [png]).image
        }
        #expect(catalogue.failure(CatalogueAPI.addImage, AddImageRequest(postId: post.id), token: owner.token, attachments: [png])?.summary == "invalid_argument image")
        #expect(catalogue.failure(CatalogueAPI.deleteImage, IDRequest(id: last!.id), token: other.token)?.code == .permissionDenied)
    }

    @Test("deleting a post takes its images and ratings with it")
    func deleteTakesImages() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let rater = try catalogue.user()
        let post = try catalogue.create(.sample(), token: owner.token)
        let image = try catalogue.client.call(CatalogueAPI.addImage, AddImageRequest(postId: post.id), token: owner.token,
                                              attachments: [TestImages.jpeg]).image
        _ = try catalogue.client.call(CatalogueAPI.rate, SetRatingRequest(postId: post.id, stars: 4), token: rater.token)
        _ = try catalogue.client.call(CatalogueAPI.delete, IDRequest(id: post.id), token: owner.token)
        #expect(catalogue.failure(CatalogueAPI.getImage, IDRequest(id: image.id))?.code == .notFound)
        let leftovers = try catalogue.catalogue.store.database.pool.read { db in
            try Int.fetchOne(db, sql: "SELECT (SELECT COUNT(*) FROM image) + (SELECT COUNT(*) FROM rating)")
        }
        #expect(leftovers == 0)
    }
}

@Suite("Ratings", .ownThread)
struct RatingTests {
    @Test("one rating per user per post, changeable; the post carries average and count; the version stays")
    func ratings() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let a = try catalogue.user()
        let b = try catalogue.user()
        let post = try catalogue.create(.sample(), token: owner.token)
        #expect(try catalogue.client.call(CatalogueAPI.rate, SetRatingRequest(postId: post.id, stars: 5), token: a.token).rating
                == Rating(average: 5, count: 1))
        #expect(try catalogue.client.call(CatalogueAPI.rate, SetRatingRequest(postId: post.id, stars: 2), token: b.token).rating
                == Rating(average: 3.5, count: 2))
        #expect(try catalogue.client.call(CatalogueAPI.rate, SetRatingRequest(postId: post.id, stars: 3), token: a.token).rating
                == Rating(average: 2.5, count: 2))
        let stored = try catalogue.client.call(CatalogueAPI.get, IDRequest(id: post.id)).post
        #expect(stored.rating == Rating(average: 2.5, count: 2))
        #expect(stored.version == 1)
        // A rating change goes out on the feed as the whole post.
        #expect(try catalogue.changes().last?.post?.rating == Rating(average: 2.5, count: 2))
    }

    @Test("ratings need a registered user, stars from 1 to 5, and a post that exists")
    func ratingRules() throws {
        let catalogue = try CatalogueFixture()
        let owner = try catalogue.user()
        let post = try catalogue.create(.sample(), token: owner.token)
        let anonymous = try catalogue.anonymous()
        #expect(catalogue.failure(CatalogueAPI.rate, SetRatingRequest(postId: post.id, stars: 4), token: anonymous.token)?.code == .permissionDenied)
        #expect(catalogue.failure(CatalogueAPI.rate, SetRatingRequest(postId: post.id, stars: 6), token: owner.token)?.summary == "invalid_argument stars")
        #expect(catalogue.failure(CatalogueAPI.rate, SetRatingRequest(postId: post.id, stars: 0), token: owner.token)?.summary == "invalid_argument stars")
        #expect(catalogue.failure(CatalogueAPI.rate, SetRatingRequest(postId: "nope", stars: 3), token: owner.token)?.code == .notFound)
    }
}
