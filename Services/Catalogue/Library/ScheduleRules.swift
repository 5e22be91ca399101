import Contracts
import OpeningHours
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
                _ = try OpeningHours(parsing: hours)
            } catch {
                throw ServiceError.invalidArgument(field: prefix + "hours", "\(prefix)hours: \(error.message). Accepted: \(OpeningHours.grammar)")
            }
        }
    }
}
