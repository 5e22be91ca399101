import Contracts
import Crypto
import Foundation
import GRDB
import ServiceKit
import Wire

/// What `listPosts` filters by.
struct PostFilter: Sendable {
    var owner: String?
    var kind: String?
    var category: String?
    var city: String?
    var countryCode: String?
}

/// One page of posts, newest first.
struct PostPage: Sendable {
    var posts: [[UInt8]]
    var total: Int
    /// The seq to continue before, when there are more.
    var nextSeq: Int64?
}

/// All of catalogue's SQL: posts (with their served JSON), images, ratings, trips,
/// the users auth reports, and the change outbox.
final class CatalogueStore: Sendable {
    let database: ServiceDatabase
    /// A post's feed entry is written from its row when the feed is read: the post's
    /// JSON is stored once, not again in the outbox.
    let outbox = ChangeOutbox(service: CatalogueAPI.service) { id, db, writer in
        guard let json = try Data.fetchOne(db.cachedStatement(sql: "SELECT json FROM post WHERE id = ?"), arguments: [id]) else {
            // The outbox holds a post's upsert only while the post exists (a delete
            // replaces it in the same transaction), so this cannot happen.
            throw ServiceError.internal
        }
        writer.appendASCII("\"type\":\"post.upserted\",\"postId\":")
        writer.write(id)
        writer.appendASCII(",\"post\":")
        writer.writeRaw(json)
    }

    init(database: ServiceDatabase) {
        self.database = database
    }

    // MARK: Reading posts

    /// A post's JSON as served.
    func postJSON(id: String) throws -> [UInt8]? {
        try database.pool.read { db in
            try Data.fetchOne(db.cachedStatement(sql: "SELECT json FROM post WHERE id = ?"), arguments: [id]).map { [UInt8]($0) }
        }
    }

    /// The JSON of the posts with these ids, in the order asked, each once; unknown ids left out.
    func postsJSON(ids: [String]) throws -> [[UInt8]] {
        guard !ids.isEmpty else { return [] }
        let unique = ids.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        let placeholders = Array(repeating: "?", count: unique.count).joined(separator: ",")
        let rows = try database.pool.read { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT id, json FROM post WHERE id IN (\(placeholders))"),
                             arguments: StatementArguments(unique))
        }
        let byID = Dictionary(rows.map { ($0[0] as String, [UInt8]($0[1] as Data)) }, uniquingKeysWith: { first, _ in first })
        return unique.compactMap { byID[$0] }
    }

    /// A post inside a write, to change it.
    func post(id: String, in db: Database) throws -> Post? {
        guard let json = try Data.fetchOne(db.cachedStatement(sql: "SELECT json FROM post WHERE id = ?"), arguments: [id]) else {
            return nil
        }
        return try Self.decode(json)
    }

    func listPosts(_ filter: PostFilter, before: Int64?, limit: Int) throws -> PostPage {
        var conditions: [String] = []
        var arguments: [any DatabaseValueConvertible] = []
        if let owner = filter.owner { conditions.append("owner_id = ?"); arguments.append(owner) }
        if let kind = filter.kind { conditions.append("kind = ?"); arguments.append(kind) }
        if let category = filter.category { conditions.append("category = ?"); arguments.append(category) }
        if let countryCode = filter.countryCode { conditions.append("country_code = ?"); arguments.append(countryCode.uppercased()) }
        if let city = filter.city { conditions.append("city_key = ?"); arguments.append(Self.key(city)) }
        let matching = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        var page = conditions
        if before != nil { page.append("seq < ?") }
        let pageWhere = page.isEmpty ? "" : "WHERE " + page.joined(separator: " AND ")
        return try database.pool.read { db in
            let total = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM post \(matching)"),
                                         arguments: StatementArguments(arguments)) ?? 0
            var pageArguments = arguments
            if let before { pageArguments.append(before) }
            pageArguments.append(limit + 1)
            let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT seq, json FROM post \(pageWhere) ORDER BY seq DESC LIMIT ?"),
                                           arguments: StatementArguments(pageArguments))
            var posts: [[UInt8]] = []
            var bytes = 0
            var lastSeq: Int64 = 0
            var nextSeq: Int64?
            while let row = try rows.next() {
                let json = [UInt8](row[1] as Data)
                // One more than a page, or a page at its size limit: say where to go on.
                if posts.count == limit || (bytes + json.count > Limits.replyPageBytes - 1024 && !posts.isEmpty) {
                    nextSeq = lastSeq
                    break
                }
                posts.append(json)
                bytes += json.count
                lastSeq = row[0]
            }
            return PostPage(posts: posts, total: total, nextSeq: nextSeq)
        }
    }

    // MARK: Writing posts

    /// A new post made ready outside any transaction: everything but the SQL.
    struct NewPost: Sendable {
        let post: Post
        let json: [UInt8]
        let fingerprint: Data
    }

    func prepare(_ draft: PostDraft, owner: String, now: Date) -> NewPost {
        let post = Post(id: Identifier.sortable(at: now), ownerId: owner, draft: draft,
                        hoursNormalized: ScheduleRules.normalized(draft.hours), createdAt: now, updatedAt: now)
        let json = post.jsonBytes
        return NewPost(post: post, json: json, fingerprint: Self.fingerprint(draft))
    }

    /// Adds a prepared post; its feed entry goes in the same transaction.
    func insert(_ new: NewPost, in db: Database) throws {
        let post = new.post
        try Self.mapRefConflict(post.ref) {
            try db.cachedStatement(sql: """
                INSERT INTO post (id, owner_id, kind, category, city_key, country_code, ref, draft_hash, json)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """).execute(arguments: [post.id, post.ownerId, post.kind, post.category, post.place.map { Self.key($0.city) },
                                         post.place?.countryCode, post.ref, new.fingerprint, Data(new.json)])
        }
        try outbox.recordCurrent(entity: post.id, isFirst: true, in: db)
    }

    /// Saves a changed post and sends it on the feed.
    func savePost(_ post: Post, in db: Database) throws -> [UInt8] {
        var post = post
        post.hoursNormalized = ScheduleRules.normalized(post.draft.hours)
        let json = post.jsonBytes
        try Self.mapRefConflict(post.ref) {
            try db.cachedStatement(sql: """
                UPDATE post SET kind = ?, category = ?, city_key = ?, country_code = ?, ref = ?, draft_hash = ?, json = ?
                WHERE id = ?
                """).execute(arguments: [post.kind, post.category, post.place.map { Self.key($0.city) }, post.place?.countryCode,
                                         post.ref, Self.fingerprint(post.draft), Data(json), post.id])
        }
        try outbox.recordCurrent(entity: post.id, in: db)
        return json
    }

    /// Deletes a post with its images and ratings, and sends the deletion on the feed.
    func deletePost(id: String, in db: Database) throws {
        try db.cachedStatement(sql: "DELETE FROM post WHERE id = ?").execute(arguments: [id])
        try outbox.record(payload: #"{"type":"post.deleted","postId":"\#(id)"}"#, entity: id, in: db)
    }

    /// Upserts `drafts` (validated, each with a `ref`) for `owner` by ref, in order;
    /// `prepared` are the drafts made ready as new posts, used for those that are.
    /// A post whose fields are already the draft's is left alone: no new version,
    /// nothing on the feed.
    func importPosts(_ drafts: [PostDraft], prepared: [NewPost], owner: String, now: Date, in db: Database) throws -> ImportReply {
        var existing: [String: (id: String, hash: Data)] = [:]
        let refs = drafts.compactMap(\.ref)
        for chunk in stride(from: 0, to: refs.count, by: 500).map({ Array(refs[$0..<min($0 + 500, refs.count)]) }) {
            let placeholders = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT ref, id, draft_hash FROM post WHERE owner_id = ? AND ref IN (\(placeholders))
                """), arguments: StatementArguments([owner] + chunk))
            while let row = try rows.next() { existing[row[0]] = (row[1], row[2]) }
        }
        var reply = ImportReply(created: 0, updated: 0, unchanged: 0, ids: [])
        reply.ids.reserveCapacity(drafts.count)
        for (draft, new) in zip(drafts, prepared) {
            guard let ref = draft.ref, let found = existing[ref] else {
                try insert(new, in: db)
                reply.ids.append(new.post.id)
                reply.created += 1
                continue
            }
            reply.ids.append(found.id)
            if found.hash == new.fingerprint {
                reply.unchanged += 1
                continue
            }
            guard var post = try post(id: found.id, in: db) else { throw ServiceError.internal }
            post.apply(draft, now: now)
            _ = try savePost(post, in: db)
            reply.updated += 1
        }
        return reply
    }

    // MARK: Helpers

    static func decode(_ json: Data) throws -> Post {
        try JSONValueDecoder().decode(Post.self, from: json)
    }

    /// What identifies the owner-set fields of a post: a draft that hashes the same
    /// changes nothing.
    static func fingerprint(_ draft: PostDraft) -> Data {
        let epoch = Date(timeIntervalSince1970: 0)
        let shape = Post(id: "", ownerId: "", draft: draft, createdAt: epoch, updatedAt: epoch)
        return Data(SHA256.hash(data: shape.jsonBytes).prefix(16))
    }

    /// Cities compare ignoring case and accents.
    static func key(_ city: String) -> String {
        city.folding(options: [.caseInsensitive, .diacriticInsensitive], locale: nil)
    }

    /// An owner uses each ref once.
    private static func mapRefConflict(_ ref: String?, _ write: () throws -> Void) throws {
        do {
            try write()
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CONSTRAINT && (error.message ?? "").contains("post.ref") {
            throw ServiceError.alreadyExists("you have a post with ref \"\(ref ?? "")\" already", field: "ref")
        }
    }
}

extension Post {
    /// Takes the owner-set fields of `draft`, as a new version.
    mutating func apply(_ draft: PostDraft, now: Date) {
        self.draft = draft
        touch(now)
    }

    /// A change by the owner: a new version.
    mutating func touch(_ now: Date) {
        version += 1
        updatedAt = now
    }
}
