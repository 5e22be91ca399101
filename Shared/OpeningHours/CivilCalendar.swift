import Wire

/// Dates of the proleptic Gregorian calendar as whole days since 1970-01-01, the unit
/// the evaluator steps in (Howard Hinnant's `days_from_civil` and `civil_from_days`, as
/// `Wire.Timestamp` has them for the wire's dates). Pure integer arithmetic: no Foundation
/// calendar in the hot path, no time zones.
struct CivilDate: Hashable, Comparable, Sendable {
    var year: Int
    /// 1 = January.
    var month: Int
    var day: Int

    static func < (lhs: CivilDate, rhs: CivilDate) -> Bool {
        (lhs.year, lhs.month, lhs.day) < (rhs.year, rhs.month, rhs.day)
    }
}

enum CivilCalendar {
    /// Days since 1970-01-01 of a date; a day past the month's end runs into the next month.
    static func days(_ date: CivilDate) -> Int {
        days(year: date.year, month: date.month, day: date.day)
    }

    static func days(year: Int, month: Int, day: Int) -> Int {
        Int(Timestamp.daysFromCivil(year: year, month: month, day: day))
    }

    static func date(_ days: Int) -> CivilDate {
        let (year, month, day) = Timestamp.civilDate(fromDays: Int64(days))
        return CivilDate(year: year, month: month, day: day)
    }

    /// Monday = 0 … Sunday = 6. 1970-01-01 was a Thursday.
    static func weekday(_ days: Int) -> Int {
        let remainder = (days + 3) % 7
        return remainder < 0 ? remainder + 7 : remainder
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        days(year: month == 12 ? year + 1 : year, month: month == 12 ? 1 : month + 1, day: 1) - days(year: year, month: month, day: 1)
    }

    /// Easter Sunday (Gregorian, the anonymous algorithm) as days since 1970.
    static func easter(year: Int) -> Int {
        let a = year % 19, b = year / 100, c = year % 100
        let d = b / 4, e = b % 4, f = (b + 8) / 25, g = (b - f + 1) / 3
        let h = (19 * a + b - d - g + 15) % 30
        let i = c / 4, k = c % 4
        let l = (32 + 2 * e + 2 * i - h - k) % 7
        let m = (a + 11 * h + 22 * l) / 451
        let month = (h + l - 7 * m + 114) / 31
        let day = (h + l - 7 * m + 114) % 31 + 1
        return days(year: year, month: month, day: day)
    }

    /// The ISO 8601 week (1…53) a day falls in: weeks start on Monday, week 1 holds the
    /// year's first Thursday.
    static func isoWeek(_ days: Int) -> Int {
        let thursday = days - weekday(days) + 3
        let year = date(thursday).year
        return (thursday - Self.days(year: year, month: 1, day: 1)) / 7 + 1
    }
}
