import Foundation

extension Hereabouts {
    /// Publishes a post of the signed-in user.
    public func createPost(_ draft: PostDraft) async throws -> Post {
        try await send { try await $0.createPost(body: .json(draft)).created.body.json.post }
    }

    /// Creates or updates many posts at once, matched by their `ref` (a restaurant
    /// list, a shop's catalogue): running the same import twice changes nothing.
    public func importPosts(_ drafts: [PostDraft]) async throws -> (created: Int, updated: Int, unchanged: Int, ids: [String]) {
        let reply = try await send { try await $0.importPosts(body: .json(.init(posts: drafts))).ok.body.json }
        return (reply.created, reply.updated, reply.unchanged, reply.ids)
    }

    /// Posts newest first, filtered by whichever of these are given: a user's own
    /// (`owner`), one kind or category, a town (`city` with `countryCode`).
    public func posts(owner: String? = nil, kind: String? = nil, category: String? = nil, city: String? = nil,
                      countryCode: String? = nil, pageSize: Int? = nil) -> Pages<Post> {
        Pages { cursor in
            let query = Operations.ListPosts.Input.Query(owner: owner, kind: kind, category: category, city: city,
                                                         countryCode: countryCode, limit: pageSize, cursor: cursor)
            let reply = try await self.send { try await $0.listPosts(query: query).ok.body.json }
            return Page(items: reply.posts, nextCursor: reply.nextCursor)
        }
    }

    /// Up to 200 posts by id, in the order asked; ids of posts that are gone are left out.
    public func posts(ids: [String]) async throws -> [Post] {
        try await send { try await $0.listPosts(query: .init(ids: ids.joined(separator: ","))).ok.body.json.posts }
    }

    public func post(_ id: String) async throws -> Post {
        try await send { try await $0.getPost(path: .init(id: id)).ok.body.json.post }
    }

    /// Changes the members of a post that `change` sets (the others stay as they are);
    /// with `ifVersion`, only while the post is still at that version (`conflict` if not).
    @discardableResult
    public func updatePost(_ id: String, _ change: PostChange) async throws -> Post {
        try await send { try await $0.updatePost(path: .init(id: id), body: .json(change)).ok.body.json.post }
    }

    public func deletePost(_ id: String) async throws {
        _ = try await send { try await $0.deletePost(path: .init(id: id)).noContent }
    }

    /// Adds a photo to a post: JPEG, PNG or WebP bytes, at most 5 MiB.
    public func addImage(to postId: String, data: Data, contentType: ImageType) async throws -> PostImage {
        try await send { client in
            let body: Operations.AddImage.Input.Body = switch contentType {
            case .jpeg: .jpeg(.init(data))
            case .png: .png(.init(data))
            case .webp: .imageWebp(.init(data))
            }
            return try await client.addImage(path: .init(id: postId), body: body).created.body.json.image
        }
    }

    /// An image's bytes, by the id in `post.images`.
    public func image(_ id: String) async throws -> Data {
        try await send { client in
            let body = try await client.getImage(path: .init(id: id)).ok.body
            return switch body {
            case .jpeg(let bytes), .png(let bytes), .imageWebp(let bytes): try await Data(collecting: bytes, upTo: 16 << 20)
            }
        }
    }

    /// Rates a post from 1 to 5 stars (again: the user's rating changes); the post's rating after it.
    @discardableResult
    public func rate(_ postId: String, stars: Int) async throws -> Rating {
        try await send { try await $0.ratePost(path: .init(id: postId), body: .json(.init(stars: stars))).ok.body.json.rating }
    }
}

/// The image types the server keeps.
public enum ImageType: String, Sendable, CaseIterable {
    case jpeg = "image/jpeg"
    case png = "image/png"
    case webp = "image/webp"
}
