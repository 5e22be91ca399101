import Contracts
import OpeningHours
import Synchronization
import Wire

/// The checks of `hours` and `timezone` that need the system's zone data, which
/// `Contracts` (no IO) cannot make.
enum ScheduleRules {
    static func check(_ draft: PostDraft, prefix: String = "") throws {
        if let timezone = draft.timezone, TimeZoneNames.timeZone(named: timezone) == nil {
            throw ServiceError.invalidArgument(field: prefix + "timezone",
                                               "\(prefix)timezone must be an IANA time zone name such as Europe/Amsterdam")
        }
        if let hours = draft.hours {
            do {
                remember(hours, normalized: try OpeningHours(parsing: hours).normalized)
            } catch {
                throw ServiceError.invalidArgument(field: prefix + "hours", "\(prefix)hours: \(error.message). Accepted: \(OpeningHours.grammar)")
            }
        }
    }

    /// `hours` in the specification's standard spelling (nil without hours, or for
    /// hours that do not parse, which `check` refuses before a post is written).
    static func normalized(_ hours: String?) -> String? {
        guard let hours else { return nil }
        if let known = recent.withLock({ $0[hours] }) { return known }
        guard let normalized = try? OpeningHours(parsing: hours).normalized else { return nil }
        remember(hours, normalized: normalized)
        return normalized
    }

    /// The last checked values' standard spellings: an import checks each post's
    /// hours, then writes it, and most posts of a feed share a few values.
    private static let recent = Mutex<[String: String]>([:])

    private static func remember(_ hours: String, normalized: String) {
        recent.withLock { recent in
            if recent.count >= 1_024 { recent.removeAll(keepingCapacity: true) }
            recent[hours] = normalized
        }
    }
}
