import Contracts
import Foundation

/// What a client fills in for a new post from where it stands: the time zone and
/// the town of the nearest gazetteer place (`geo.places.reverse`), where the author
/// gave none. The phone's "post here" needs no more than a point; `here post
/// create` and `POST /v1/posts` both complete a draft this way.
public enum PostPlacement {
    /// How far the nearest place may be to name a post's town: past it (at sea, in a
    /// desert) a post has no town rather than one hundreds of kilometres away.
    public static let maxTownDistance: Double = 50_000

    /// `draft` with `timezone` and `place` taken from `nearest` (`distance` metres
    /// away) where they are missing. `placeName` is a place the author named for the
    /// point (a city they typed), which wins over the nearest place's name. The time
    /// zone is taken at any distance: a zone spans far more than a town.
    public static func complete(_ draft: PostDraft, nearest: Place, distance: Double, placeName: String? = nil) -> PostDraft {
        var draft = draft
        if draft.timezone == nil { draft.timezone = nearest.timezone }
        if draft.place == nil, placeName != nil || distance <= maxTownDistance {
            draft.place = PostPlace(city: placeName ?? nearest.name, countryCode: nearest.countryCode)
        }
        return draft
    }
}
