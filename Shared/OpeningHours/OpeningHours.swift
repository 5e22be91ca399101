import Foundation

/// Whether a venue is open at an instant, as apps show it.
public enum OpenStatus: String, Sendable, Codable, Equatable, CaseIterable {
    case open
    /// Open, and closing within the next 30 minutes (inclusive).
    case closesSoon = "closes_soon"
    case closed
    /// Closed, and opening within the next 30 minutes (inclusive).
    case opensSoon = "opens_soon"
    /// The hours say they do not know (`unknown`, or a rule that only comments,
    /// `"by appointment"`). Never shown as open.
    case unknown
    /// Open since a time with no closing time given (`18:00+`): maybe still open.
    case openEnd = "open_end"

    /// Whether the venue is surely open (an `openNow` filter keeps these).
    public var isOpen: Bool { self == .open || self == .closesSoon }
}

/// What the hours say at an instant: the status, when it next changes, and the
/// comment of the rule that decides it.
public struct OpeningState: Sendable, Equatable {
    public var status: OpenStatus
    /// When the venue next opens, closes or turns unknown; nil when the hours never
    /// change again (`24/7`) or not within `OpeningHours.horizonDays` (within five
    /// weeks for hours that name no dates or holidays: they repeat by then).
    public var nextChange: Date?
    public var comment: String?
}

/// A parsed `opening_hours` value (OpenStreetMap's specification, read as the
/// reference implementation opening_hours.js reads it; see Docs/OPENING_HOURS.md).
public struct OpeningHours: Sendable, Equatable, CustomStringConvertible {
    /// The text as given, trimmed.
    public let text: String
    /// The same hours in the specification's standard spelling (`Mon-Fri 8-18` →
    /// `Mo-Fr 08:00-18:00`); equal to `text` when that was standard already.
    public var normalized: String { Normalizer.text(of: rules) }
    /// The rules as parsed (the program adds the parts past midnight).
    let rules: [Rule]
    let program: RuleProgram
    /// The timelines of a week-stable program, Monday first.
    private let week: [DayTimeline]?

    public var description: String { text }

    /// Whether the hours depend on where the venue is (the sun, or holidays).
    public var needsPlace: Bool {
        program.entries.contains { entry in
            entry.rule.times.contains { span in
                if case .sun = span.start { return true }
                if case .sun? = span.end { return true }
                return false
            } || (entry.rule.weekdays + entry.rule.holidays).contains { if case .holiday = $0 { return true } else { return false } }
        }
    }

    /// How far `nextChange` looks ahead for hours that differ by date.
    public static let horizonDays = 3 * 366

    /// What the parser accepts, for error messages and documentation.
    public static let grammar = """
        OpenStreetMap's opening_hours (https://wiki.openstreetmap.org/wiki/Key:opening_hours/specification): \
        rules joined by ";" (later rules replace earlier ones for their days), "," (adds) or "||" (fallback); \
        each with years (2026, 2026-2028), months and dates (Jan-Mar, Dec 24-26, easter -2 days), weeks (week 1-53/2), \
        weekdays (Mo-Fr, Su[1], Fr[-1]), holidays (PH, SH, PH +1 day), times (08:00-12:00, 18:00-02:00, 18:00+, \
        sunset-01:00 in parentheses), "24/7", then open, off, closed or unknown and a "comment".
        """

    public init(parsing text: String) throws(OpeningHoursError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw OpeningHoursError(message: "hours is empty") }
        let rules = try Parser.parse(trimmed)
        self.text = trimmed
        self.rules = rules
        let program = RuleProgram(rules)
        self.program = program
        if program.isWeekStable {
            // 1970-01-05 was a Monday; a week-stable program reads no place or zone.
            let context = EvaluationContext(place: .unknown, timeZone: TimeZone(identifier: "UTC")!)
            week = (0..<7).map { program.timeline(day: 4 + $0, context: context) }
        } else {
            week = nil
        }
    }

    public static func == (lhs: OpeningHours, rhs: OpeningHours) -> Bool {
        lhs.text == rhs.text
    }

    // MARK: Evaluation

    func timeline(day: Int64, context: EvaluationContext) -> DayTimeline {
        if let week { return week[CivilCalendar.weekday(Int(day))] }
        if let known = context.memo.timelines[day] { return known }
        let timeline = program.timeline(day: Int(day), context: context)
        context.memo.timelines[day] = timeline
        return timeline
    }

    func segment(wall: Int64, context: EvaluationContext) -> Segment {
        let day = wall.floorDiv(86_400)
        return timeline(day: day, context: context).segment(at: Int((wall - day * 86_400) / 60))
    }

    /// The status at `instant` in the venue's time zone.
    public func status(at instant: Date, in timeZone: TimeZone, place: OpeningHoursPlace = .unknown) -> OpenStatus {
        status(in: LocalWindow(instant: instant, timeZone: timeZone), place: place)
    }

    /// The status at the window's instant. Build the window once per time zone and
    /// instant to judge many venues of that zone.
    public func status(in window: LocalWindow, place: OpeningHoursPlace = .unknown) -> OpenStatus {
        status(in: window, context: EvaluationContext(place: place, timeZone: window.timeZone))
    }

    private func status(in window: LocalWindow, context: EvaluationContext) -> OpenStatus {
        let now = window.instant
        let current = segment(wall: window.wall(now), context: context)
        switch current.state {
        case .unknown: return current.isOpenEnd ? .openEnd : .unknown
        case .open, .closed: break
        }
        let isOpenNow = current.state == .open
        // The status can only change at a segment's start, or where the clock jumps.
        for boundary in boundaries(in: window, context: context) where boundary > now && boundary <= now + LocalWindow.soon {
            let isOpenThen = segment(wall: window.wall(boundary), context: context).state == .open
            if isOpenNow && !isOpenThen { return .closesSoon }
            if !isOpenNow && isOpenThen { return .opensSoon }
        }
        return isOpenNow ? .open : .closed
    }

    /// The status, when it next changes and the deciding rule's comment.
    public func state(at instant: Date, in timeZone: TimeZone, place: OpeningHoursPlace = .unknown) -> OpeningState {
        let window = LocalWindow(instant: instant, timeZone: timeZone)
        let context = EvaluationContext(place: place, timeZone: timeZone)
        let current = segment(wall: window.wall(window.instant), context: context)
        return OpeningState(status: status(in: window, context: context),
                            nextChange: nextChange(after: window.instant, current: current, context: context),
                            comment: current.comment)
    }

    /// The first instant after `instant` whose state differs from `current`'s.
    private func nextChange(after instant: Int64, current: Segment, context: EvaluationContext) -> Date? {
        let zone = context.timeZone
        let wall = instant + Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(instant))))
        let today = wall.floorDiv(86_400)
        // Hours with no dates repeat within a week (the sun only drifts) or, with nth
        // weekdays, within five: a change not seen by then never comes.
        let horizon = week != nil ? 8 : (program.repeatsMonthly ? 36 : Self.horizonDays)
        for day in today...(today + Int64(horizon)) {
            for segment in timeline(day: day, context: context).segments {
                let start = day * 86_400 + Int64(segment.start) * 60
                guard start > wall, !segment.sameState(as: current) else { continue }
                return Date(timeIntervalSince1970: Double(Self.instant(ofWall: start, in: zone)))
            }
        }
        return nil
    }

    /// The instant a local wall-clock time happens (in a spring-forward gap: when the
    /// clock jumps past it).
    static func instant(ofWall wall: Int64, in zone: TimeZone) -> Int64 {
        let guess = wall - Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(wall))))
        return wall - Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(guess))))
    }

    /// Instants in the window where a segment starts, or the clock jumps.
    private func boundaries(in window: LocalWindow, context: EvaluationContext) -> [Int64] {
        var instants: [Int64] = []
        if let transition = window.transition { instants.append(transition) }
        let first = window.wall(window.instant).floorDiv(86_400)
        let last = window.wall(window.instant + LocalWindow.soon).floorDiv(86_400)
        for day in first...last {
            for segment in timeline(day: day, context: context).segments {
                instants.append(contentsOf: window.instants(ofWall: day * 86_400 + Int64(segment.start) * 60))
            }
        }
        return instants.sorted()
    }
}

/// An instant as one time zone sees it over the next 30 minutes: the clock offset
/// now, and where and how it changes if a daylight-saving switch falls inside.
public struct LocalWindow: Sendable, Equatable {
    /// "Soon" means within this many seconds, inclusive.
    public static let soon: Int64 = 30 * 60

    /// Seconds since 1970 (UTC), rounded down.
    public let instant: Int64
    let offsetBefore: Int64
    let offsetAfter: Int64
    /// The first second of the new offset, when it changes within the window.
    let transition: Int64?
    let timeZone: TimeZone

    public init(instant date: Date, timeZone: TimeZone) {
        self.timeZone = timeZone
        let instant = Int64(date.timeIntervalSince1970.rounded(.down))
        func offset(_ second: Int64) -> Int64 {
            Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(second))))
        }
        let before = offset(instant)
        let after = offset(instant + Self.soon)
        var transition: Int64?
        if before != after {
            // The first second with the new offset, by bisection over the window.
            var low = instant, high = instant + Self.soon
            while high - low > 1 {
                let middle = (low + high) / 2
                if offset(middle) == before { low = middle } else { high = middle }
            }
            transition = high
        }
        self.instant = instant
        self.offsetBefore = before
        self.offsetAfter = after
        self.transition = transition
    }

    /// The local wall-clock time (seconds since 1970 in local terms) at an instant
    /// inside the window.
    func wall(_ instant: Int64) -> Int64 {
        if let transition, instant >= transition { return instant + offsetAfter }
        return instant + offsetBefore
    }

    /// The instants inside the window when the wall clock shows `wall`: none in a
    /// spring-forward gap, two in a fall-back repeat.
    func instants(ofWall wall: Int64) -> [Int64] {
        guard let transition else { return [wall - offsetBefore] }
        var result: [Int64] = []
        if wall - offsetBefore < transition { result.append(wall - offsetBefore) }
        if wall - offsetAfter >= transition { result.append(wall - offsetAfter) }
        return result
    }
}

/// Why an `opening_hours` value was refused, in words for the client.
public struct OpeningHoursError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}

