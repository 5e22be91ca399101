import Contracts
import Foundation

/// What geo keeps of a post: the fields of a hit, what its words come from, and
/// what fences and opening hours need. Stored in geo's file, one row each. The
/// owner's fields are the post's draft, read through the indexed post itself
/// (`post.title`); geo keeps no `price` or `place`, so those are always nil.
@dynamicMemberLookup
struct IndexedPost: Sendable, Equatable {
    var id: String
    var ownerId: String
    var draft: PostDraft
    var rating: Rating
    var createdAt: Date

    init(id: String, ownerId: String, draft: PostDraft, rating: Rating = Rating(average: nil, count: 0), createdAt: Date) {
        self.id = id
        self.ownerId = ownerId
        self.draft = draft
        self.draft.price = nil
        self.draft.place = nil
        self.rating = rating
        self.createdAt = createdAt
    }

    init(_ post: Post) {
        self.init(id: post.id, ownerId: post.ownerId, draft: post.draft, rating: post.rating, createdAt: post.createdAt)
    }

    subscript<Value>(dynamicMember field: WritableKeyPath<PostDraft, Value>) -> Value {
        get { draft[keyPath: field] }
        set { draft[keyPath: field] = newValue }
    }
}
