/// Whether a rule's date selectors select a day. Selectors of different kinds must all
/// match (`Dec Mo` is the Mondays of December); entries of one kind, any of them.
extension Rule {
    func matches(day: Int, place: OpeningHoursPlace) -> Bool {
        if !years.isEmpty {
            let year = CivilCalendar.date(day).year
            guard years.contains(where: { $0.contains(year) }) else { return false }
        }
        for group in monthdays {
            guard group.contains(where: { $0.contains(day) }) else { return false }
        }
        if !weeks.isEmpty {
            let week = CivilCalendar.isoWeek(day)
            guard weeks.contains(where: { $0.contains(week) }) else { return false }
        }
        if !holidays.isEmpty {
            guard holidays.contains(where: { $0.contains(day, place: place) }) else { return false }
        }
        if !weekdays.isEmpty {
            guard weekdays.contains(where: { $0.contains(day, place: place) }) else { return false }
        }
        return true
    }
}

extension YearRange {
    func contains(_ year: Int) -> Bool {
        year >= from && year <= to && (year - from) % period == 0
    }
}

extension WeekRange {
    func contains(_ week: Int) -> Bool {
        if from <= to { return week >= from && week <= to && (week - from) % period == 0 }
        // `week 50-02`: over the new year.
        return week >= from || week <= to
    }
}

extension DatePoint {
    /// The day this point falls on in `year` (its own year when it names one); nil
    /// for a date the year does not have (Feb 29).
    func day(in year: Int) -> Int? {
        let year = self.year ?? year
        var day: Int
        switch base {
        case .fixed(let month, let dayOfMonth):
            guard dayOfMonth <= CivilCalendar.daysInMonth(year: year, month: month) else { return nil }
            day = CivilCalendar.days(year: year, month: month, day: dayOfMonth)
        case .easter: day = CivilCalendar.easter(year: year)
        case .nthWeekday(let month, let weekday, let nth):
            let first = CivilCalendar.days(year: year, month: month, day: 1)
            let length = CivilCalendar.daysInMonth(year: year, month: month)
            if nth > 0 {
                day = first + (weekday - CivilCalendar.weekday(first) + 7) % 7 + 7 * (nth - 1)
            } else {
                let last = first + length - 1
                day = last - (CivilCalendar.weekday(last) - weekday + 7) % 7 + 7 * (nth + 1)
            }
            guard day >= first, day < first + length else { return nil }
        }
        if let shift = weekdayShift {
            // `Dec 25 +We`: the next Wednesday after the date; `-We` the last before it.
            repeat { day += shift.forward ? 1 : -1 } while CivilCalendar.weekday(day) != shift.weekday
        }
        return day + dayOffset
    }
}

extension MonthdayRange {
    func contains(_ day: Int) -> Bool {
        let year = CivilCalendar.date(day).year
        switch self {
        case .months(let fromYear, let from, let toYear, let to):
            guard let fromYear else {
                let month = CivilCalendar.date(day).month
                return from <= to ? (month >= from && month <= to) : (month >= from || month <= to)
            }
            let endYear = toYear ?? (to < from ? fromYear + 1 : fromYear)
            let first = CivilCalendar.days(year: fromYear, month: from, day: 1)
            let last = CivilCalendar.days(year: endYear, month: to, day: 1) + CivilCalendar.daysInMonth(year: endYear, month: to) - 1
            return day >= first && day <= last
        case .dates(let from, let to, let openEnd, let period):
            // The range starting in the year before, this year or the next (offsets move
            // dates over the new year); a range naming its year starts only then.
            // The reference looks at this year's easter only.
            let candidates: [Int]
            if let fixedYear = from.year {
                candidates = [fixedYear]
            } else if case .easter = from.base {
                candidates = [year]
            } else {
                candidates = [year - 1, year, year + 1]
            }
            for startYear in candidates {
                guard let first = from.day(in: startYear), first <= day else { continue }
                var last: Int
                if let to {
                    guard var end = to.day(in: startYear) else { continue }
                    // A range wraps over the new year (`Dec 25-easter`, `easter-Apr 02`).
                    if end < first, to.year == nil {
                        guard let next = to.day(in: startYear + 1) else { continue }
                        end = next
                    }
                    // The reference ends a range at easter the day before it.
                    if case .easter = to.base { end -= 1 }
                    last = end
                } else if openEnd {
                    // `Dec 24+`: from the date to the end of its year; `2020 Dec 24+` for good.
                    if from.year != nil { return true }
                    last = CivilCalendar.days(year: startYear, month: 12, day: 31)
                } else {
                    last = first
                }
                if day <= last { return (day - first) % period == 0 }
            }
            return false
        }
    }
}

extension DaySelector {
    func contains(_ day: Int, place: OpeningHoursPlace) -> Bool {
        switch self {
        case .weekdays(let from, let to, let nth, let offset):
            let base = day - offset
            let weekday = CivilCalendar.weekday(base)
            guard from <= to ? (weekday >= from && weekday <= to) : (weekday >= from || weekday <= to) else { return false }
            guard !nth.isEmpty else { return true }
            let date = CivilCalendar.date(base)
            let fromStart = (date.day - 1) / 7 + 1
            let fromEnd = -((CivilCalendar.daysInMonth(year: date.year, month: date.month) - date.day) / 7 + 1)
            return nth.contains { $0.contains(fromStart) || $0.contains(fromEnd) }
        case .holiday(let kind, let offset):
            guard let country = place.country else { return false }
            return HolidayCalendar.isHoliday(kind, day: day - offset, country: country, subdivision: place.subdivision) ?? false
        }
    }
}
