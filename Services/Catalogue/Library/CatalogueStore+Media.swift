import Contracts
import Foundation
import GRDB
import Wire

/// An image with the post it belongs to, for `catalogue.images.get` and ownership checks.
struct StoredImage: Sendable {
    var image: PostImage
    var postID: String
    var data: Data?
}

extension CatalogueStore {
    // MARK: Images

    func image(id: String, withData: Bool) throws -> StoredImage? {
        try database.pool.read { db in try image(id: id, withData: withData, in: db) }
    }

    func image(id: String, withData: Bool, in db: Database) throws -> StoredImage? {
        let columns = "id, content_type, width, height, bytes, post_id" + (withData ? ", data" : "")
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT \(columns) FROM image WHERE id = ?"), arguments: [id]) else {
            return nil
        }
        return StoredImage(image: PostImage(id: row[0], contentType: row[1], width: row[2], height: row[3], bytes: row[4]),
                           postID: row[5], data: withData ? row[6] : nil)
    }

    /// Appends an image to a post (the caller checked the owner and the count).
    func addImage(_ image: PostImage, data: Data, to post: inout Post, now: Date, in db: Database) throws {
        let position = (try Int.fetchOne(db.cachedStatement(sql: "SELECT MAX(position) FROM image WHERE post_id = ?"),
                                         arguments: [post.id]) ?? 0) + 1
        try db.cachedStatement(sql: """
            INSERT INTO image (id, post_id, position, content_type, width, height, bytes, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """).execute(arguments: [image.id, post.id, position, image.contentType, image.width, image.height, image.bytes, data])
        post.images.append(image)
        post.touch(now)
        _ = try savePost(post, in: db)
    }

    func deleteImage(id: String, from post: inout Post, now: Date, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM image WHERE id = ?").execute(arguments: [id])
        post.images.removeAll { $0.id == id }
        post.touch(now)
        _ = try savePost(post, in: db)
    }

    // MARK: Ratings

    /// Sets `user`'s stars for a post (replacing their earlier ones) and returns the
    /// post's new rating. A rating is not a change by the owner: no new version.
    func setRating(postID: String, user: String, stars: Int, in db: Database) throws -> Rating {
        guard var post = try post(id: postID, in: db) else {
            throw ServiceError.notFound("no post has the id \(postID)")
        }
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO rating (post_id, user_id, stars) VALUES (?, ?, ?)")
            .execute(arguments: [postID, user, stars])
        post.rating = try rating(ofPost: postID, in: db)
        _ = try savePost(post, in: db)
        return post.rating
    }

    func rating(ofPost postID: String, in db: Database) throws -> Rating {
        let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT COALESCE(SUM(stars), 0), COUNT(*) FROM rating WHERE post_id = ?"),
                                   arguments: [postID])
        return Rating(sum: row?[0] ?? 0, count: row?[1] ?? 0)
    }
}
