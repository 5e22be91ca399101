/// The rules of a value in the order the reference evaluates them: each rule, then
/// (when its times reach past midnight) a rule of its own for the next day's part.
struct RuleProgram: Sendable, Equatable {
    struct Entry: Sendable, Equatable {
        var rule: Rule
        /// The rule's part past midnight: it applies on the day after the rule's days.
        var isWrapped: Bool
        /// For each time span: whether it reaches past midnight (read with the
        /// reference's stand-in times for the sun, as it decides this when parsing).
        var wraps: [Bool]

        /// Whether a later rule of the same days replaces what the rules before said.
        func resets(after previous: Entry?) -> Bool {
            let meaning = rule.state == .open
            return (rule.hasDateSelectors || (previous != nil && meaning && !previous!.rule.hasDateSelectors))
                && (meaning || rule.state == .unknown) && !isWrapped && !rule.isAdditional && !rule.isFallback
        }
    }

    let entries: [Entry]
    /// The day's timeline depends on the weekday only: no dates, weeks, years,
    /// holidays or sun. Such a program is evaluated once per weekday.
    let isWeekStable: Bool
    /// No selector of the year (dates, months, weeks, years, holidays): the days repeat
    /// each week but for the sun's drift and the nth weekdays of a month.
    let repeatsMonthly: Bool

    init(_ rules: [Rule]) {
        var entries: [Entry] = []
        var weekStable = true
        var monthly = true
        for rule in rules {
            let wraps = rule.times.map(Self.wraps)
            entries.append(Entry(rule: rule, isWrapped: false, wraps: wraps))
            if wraps.contains(true) {
                entries.append(Entry(rule: rule, isWrapped: true, wraps: wraps))
            }
            if !rule.years.isEmpty || !rule.monthdays.isEmpty || !rule.weeks.isEmpty {
                weekStable = false
                monthly = false
            }
            do {
                for selector in rule.weekdays + rule.holidays {
                    switch selector {
                    case .holiday:
                        weekStable = false
                        monthly = false
                    case .weekdays(_, _, let nth, let offset) where !nth.isEmpty || offset != 0: weekStable = false
                    default: break
                    }
                }
            }
            for span in rule.times {
                if case .sun = span.start { weekStable = false }
                if case .sun? = span.end { weekStable = false }
            }
        }
        self.entries = entries
        self.isWeekStable = weekStable
        self.repeatsMonthly = monthly
    }

    /// Whether a span reaches past midnight, as the reference decides it when parsing.
    static func wraps(_ span: TimeSpan) -> Bool {
        let start = span.start.fallbackMinutes
        guard let end = span.end?.fallbackMinutes else {
            return openEndClose(from: start) > DayTimeline.minutesInDay
        }
        if span.openEnd { return true }
        if end > DayTimeline.minutesInDay { return true }
        if case .clock = span.start, case .clock? = span.end { return end <= start }
        return end < start
    }

    /// Where the reference guesses an open end closes.
    static func openEndClose(from start: Int) -> Int {
        if start >= 22 * 60 { return start + 8 * 60 }
        if start >= 17 * 60 { return start + 10 * 60 }
        return max(start, DayTimeline.minutesInDay)
    }

    /// The timeline of local day `day` (days since 1970 in local terms).
    func timeline(day: Int, context: EvaluationContext) -> DayTimeline {
        var matched: [Int] = []
        for (index, entry) in entries.enumerated() {
            let selectsDay = entry.isWrapped ? day - 1 : day
            guard entry.rule.matches(day: selectsDay, place: context.place) else { continue }
            if entry.resets(after: index > 0 ? entries[index - 1] : nil) { matched.removeAll(keepingCapacity: true) }
            matched.append(index)
        }
        var timeline = DayTimeline()
        for index in matched {
            apply(entries[index], day: day, to: &timeline, context: context)
        }
        return timeline
    }

    private func apply(_ entry: Entry, day: Int, to timeline: inout DayTimeline, context: EvaluationContext) {
        let rule = entry.rule
        let state = rule.state
        guard !rule.times.isEmpty else {
            if !entry.isWrapped {
                timeline.paint(0, DayTimeline.minutesInDay, state: state, comment: rule.comment, isOpenEnd: false,
                               overClosedOnly: rule.isFallback)
            }
            return
        }
        let origin = entry.isWrapped ? day - 1 : day
        let shift = entry.isWrapped ? DayTimeline.minutesInDay : 0
        for (index, span) in rule.times.enumerated() {
            guard let (start, end) = interval(span, wraps: entry.wraps[index], day: origin, context: context) else { continue }
            let endState: RuleState = state == .closed ? .closed : .unknown
            if span.end == nil {
                paintPart(start, openEndClose(rule, from: start, until: end, day: origin, context: context, wraps: entry.wraps),
                          entry: entry, state: endState, isOpenEnd: state != .closed, shift: shift, timeline: &timeline)
                continue
            }
            paintPart(start, end, entry: entry, state: state, isOpenEnd: false, shift: shift, timeline: &timeline)
            if span.openEnd, let endPoint = span.end {
                // `10:00-02:00+`: open until the end, then an open end from there (its
                // close guessed, as the reference does, from the end's parse-time minutes).
                let guessed = Self.openEndClose(from: endPoint.fallbackMinutes)
                paintPart(end, openEndClose(rule, from: end, until: max(guessed, end), day: origin, context: context,
                                            wraps: entry.wraps),
                          entry: entry, state: endState, isOpenEnd: state != .closed, shift: shift, timeline: &timeline)
            }
        }
    }

    private func paintPart(_ start: Int, _ end: Int, entry: Entry, state: RuleState, isOpenEnd: Bool, shift: Int,
                           timeline: inout DayTimeline) {
        // The origin day's part is before midnight, the wrapped part after it.
        let (from, to) = entry.isWrapped ? (max(start, shift) - shift, end - shift) : (start, min(end, DayTimeline.minutesInDay))
        timeline.paint(from, to, state: state, comment: entry.rule.comment, isOpenEnd: isOpenEnd, overClosedOnly: entry.rule.isFallback)
    }

    /// Where an open end from `start` stops: at its guessed close, or where a later
    /// span of the same rule starts (`07:00+,12:00-16:00` is unknown from 07:00 to
    /// 12:00 and closed after 16:00, as the reference reads it).
    private func openEndClose(_ rule: Rule, from start: Int, until close: Int, day: Int, context: EvaluationContext,
                              wraps: [Bool]) -> Int {
        var close = close
        for (index, other) in rule.times.enumerated() {
            if let next = interval(other, wraps: wraps[index], day: day, context: context), next.0 > start { close = min(close, next.0) }
        }
        return close
    }

    /// A span on its origin day, in minutes from that day's midnight (the end may be
    /// up to 2,880, in the next day).
    private func interval(_ span: TimeSpan, wraps: Bool, day: Int, context: EvaluationContext) -> (Int, Int)? {
        let start = context.minutes(of: span.start, day: day)
        guard let endPoint = span.end else {
            // The reference guesses the close when parsing, from the start's stand-in minutes.
            return (start, max(start, Self.openEndClose(from: span.start.fallbackMinutes)))
        }
        var end = context.minutes(of: endPoint, day: day, atNoon: !wraps)
        // `22:00-02:00`, `sunset-sunrise`, `10:00-10:00` (a whole day from 10:00).
        if wraps && end <= start { end += DayTimeline.minutesInDay }
        return start < end ? (start, end) : nil
    }
}

extension TimePoint {
    /// The minutes the reference assumes when parsing (sun events at fixed times).
    var fallbackMinutes: Int {
        switch self {
        case .clock(let minutes): minutes
        case .sun(let event, let offset): event.fallbackMinutes + offset
        }
    }
}
