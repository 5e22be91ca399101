/// The parsed form of an `opening_hours` value: rules in order, each a set of date and
/// time selectors and what it makes of the times they select. Names follow the
/// specification (https://wiki.openstreetmap.org/wiki/Key:opening_hours/specification).

/// What a rule makes of the times it selects.
enum RuleState: Sendable, Equatable {
    case open, closed, unknown
}

struct Rule: Sendable, Equatable {
    /// Joined to the rule before by `,`: it adds to what that rule says, never replaces it.
    var isAdditional = false
    /// After `||` (with the rules `,` joins to it): it applies only where the rules
    /// before leave the venue closed.
    var isFallback = false
    var years: [YearRange] = []
    /// Groups of months and dates written apart (`Jan-Feb Jan 09-15`): each must
    /// match; within a group (`Aug,Dec 25-easter`), any entry.
    var monthdays: [[MonthdayRange]] = []
    var weeks: [WeekRange] = []
    /// Weekdays, with holidays written in their list (`Mo-Fr,PH`): any of them.
    var weekdays: [DaySelector] = []
    /// Holidays written apart from weekdays (`SH Mo-Fr`, `PH -1 day SH`): any of them,
    /// and the weekdays too when there are any, as the reference reads it.
    var holidays: [DaySelector] = []
    var times: [TimeSpan] = []
    /// `open`, `closed` (or `off`), `unknown` as written; nil when none was.
    var modifier: RuleState?
    var comment: String?
    /// `24/7`: written for readability, it selects nothing narrower than every day.
    var isAlways = false
    /// A rule made from the hours another rule carries past midnight: it selects the
    /// day after the days its origin selects.
    var isWrapped = false

    /// What the rule makes of its times: as written, else `unknown` when it only
    /// comments (`Mo "by appointment"`), else open.
    var state: RuleState {
        modifier ?? (comment != nil ? .unknown : .open)
    }

    /// Whether any date selector narrows the days (the reference's "date.length > 0").
    var hasDateSelectors: Bool {
        !years.isEmpty || !monthdays.isEmpty || !weeks.isEmpty || !weekdays.isEmpty || !holidays.isEmpty
    }
}

struct YearRange: Sendable, Equatable {
    var from: Int
    /// `Int.max` for an open end (`2014+`).
    var to: Int
    var period: Int = 1
}

struct WeekRange: Sendable, Equatable {
    var from: Int
    var to: Int
    var period: Int = 1
}

/// A day of the year in a rule: a fixed date or Easter, moved to a weekday and by days.
struct DatePoint: Sendable, Equatable {
    enum Base: Sendable, Equatable {
        case fixed(month: Int, day: Int)
        case easter
        /// `Jan Su[-1]`: the last Sunday of January; `nth` 1…5 or -1…-5.
        case nthWeekday(month: Int, weekday: Int, nth: Int)
    }

    var year: Int?
    var base: Base
    /// `+We`: the first Wednesday after (`forward`) or the last before the date.
    var weekdayShift: (weekday: Int, forward: Bool)?
    var dayOffset = 0

    static func == (lhs: DatePoint, rhs: DatePoint) -> Bool {
        lhs.year == rhs.year && lhs.base == rhs.base && lhs.dayOffset == rhs.dayOffset
            && lhs.weekdayShift?.weekday == rhs.weekdayShift?.weekday && lhs.weekdayShift?.forward == rhs.weekdayShift?.forward
    }
}

enum MonthdayRange: Sendable, Equatable {
    /// Whole months, `Jan-Mar` (wrapping `Nov-Feb`), optionally of given years.
    case months(fromYear: Int?, from: Int, toYear: Int?, to: Int)
    /// Dates, `Dec 24-26`, `Dec 24-Jan 02`, `easter -2 days`; `openEnd` for `Dec 24+`.
    /// `period` takes every nth day of the range (`Jan 01-31/8`).
    case dates(from: DatePoint, to: DatePoint?, openEnd: Bool, period: Int = 1)
}

/// One entry of a day group.
enum DaySelector: Sendable, Equatable {
    /// Weekdays Monday = 0 (a range may wrap, `Fr-Mo`); `nth` restricts to their
    /// occurrences in the month (1, 2, … from the start, -1, -2, … from the end);
    /// `offset` moves the selected days (`Su[-1] -1 day`).
    case weekdays(from: Int, to: Int, nth: [ClosedRange<Int>], offset: Int)
    /// Public (`PH`) or school (`SH`) holidays of the venue's place, moved by days.
    case holiday(HolidayKind, offset: Int)
}

public enum HolidayKind: String, Sendable, Equatable, Hashable {
    case `public` = "PH"
    case school = "SH"
}

/// A moment of a day: a clock time or an event of the sun, in minutes from midnight.
enum TimePoint: Sendable, Equatable {
    case clock(Int)
    case sun(SunEvent, offset: Int)
}

public enum SunEvent: String, Sendable, Equatable, CaseIterable {
    case dawn, sunrise, sunset, dusk

    /// What the reference uses when it cannot compute the event (no place known).
    var fallbackMinutes: Int {
        switch self {
        case .dawn: 5 * 60 + 30
        case .sunrise: 6 * 60
        case .sunset: 18 * 60
        case .dusk: 18 * 60 + 30
        }
    }
}

struct TimeSpan: Sendable, Equatable {
    var start: TimePoint
    /// Nil for an open end without a closing time (`18:00+`).
    var end: TimePoint?
    /// `18:00+` or `18:00-22:00+`: open until an unknown time.
    var openEnd: Bool
}
