import Foundation

/// The server's objects under the names apps use; each is generated from the
/// schema of the same name in Docs/openapi.yaml.
public typealias User = Components.Schemas.User
public typealias PublicProfile = Components.Schemas.PublicProfile
public typealias Post = Components.Schemas.Post
public typealias PostDraft = Components.Schemas.PostDraft
public typealias PostChange = Components.Schemas.PostChange
public typealias PostPlace = Components.Schemas.PostPlace
public typealias Price = Components.Schemas.Price
public typealias PostImage = Components.Schemas.Image
public typealias Rating = Components.Schemas.Rating
public typealias Hit = Components.Schemas.Hit
/// Where a search's words are in a hit's title (`hit.highlights?.title`).
public typealias Highlights = Components.Schemas.Highlights
/// A stretch of a string in UTF-16 code units, as `NSRange` counts.
public typealias TextRange = Components.Schemas.TextRange
/// A user near a point, as `usersNear` and `watchUsers(near:…)` give them: the
/// distance is to their home's cell, rounded up to 500 m.
public typealias NearUser = Components.Schemas.NearUser
public typealias Place = Components.Schemas.Place
public typealias SearchCenter = Components.Schemas.Center
public typealias Country = Components.Schemas.Country
public typealias Trip = Components.Schemas.Trip
public typealias Message = Components.Schemas.Message
public typealias Conversation = Components.Schemas.Conversation
public typealias Attributes = Components.Schemas.Attributes

/// Where a search is centred: a point, or a place's name the server resolves
/// (`"Utrecht"`, `"Utrecht, NL"`).
public enum SearchOrigin: Sendable, Hashable {
    case coordinate(latitude: Double, longitude: Double)
    case place(String)

    var latitude: Double? {
        if case .coordinate(let latitude, _) = self { return latitude }
        return nil
    }

    var longitude: Double? {
        if case .coordinate(_, let longitude) = self { return longitude }
        return nil
    }

    var placeName: String? {
        if case .place(let name) = self { return name }
        return nil
    }
}

extension PostDraft {
    /// A draft with what every post needs; set the rest as properties
    /// (`draft.price = Price(amount: 25, currency: "EUR")`).
    public init(kind: String, title: String, latitude: Double, longitude: Double) {
        self.init(kind: kind, lat: latitude, lon: longitude, title: title)
    }
}

extension Components.Schemas.TextRange {
    /// As an `NSRange`, for `NSAttributedString` and UIKit.
    public var nsRange: NSRange { NSRange(location: start, length: length) }

    /// The stretch of `string` this covers; nil when it does not fit `string`.
    public func range(in string: String) -> Range<String.Index>? { Range(nsRange, in: string) }
}
