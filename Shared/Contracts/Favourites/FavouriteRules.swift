import Foundation
import Wire

public enum FavouriteRules {
    /// A user keeps at most this many; one more is `too_large`.
    public static let maxPerUser = 10_000
    public static let maxContains = 200
}
