import Foundation

/// Whether a venue is open at an instant, as apps show it.
public enum OpenStatus: String, Sendable, Codable, Equatable, CaseIterable {
    case open
    /// Open, and closing within the next 30 minutes (inclusive).
    case closesSoon = "closes_soon"
    case closed
    /// Closed, and opening within the next 30 minutes (inclusive).
    case opensSoon = "opens_soon"
}

/// A parsed `opening_hours` value (a subset of OpenStreetMap's syntax; see
/// `OpeningHours.grammar`) as a weekly schedule.
public struct OpeningHours: Sendable, Equatable, CustomStringConvertible {
    /// An open span of one weekday, in seconds from that day's midnight. An end past
    /// 86,400 reaches into the next day: those hours belong to the day the span starts on.
    struct Span: Sendable, Equatable {
        var start: Int32
        var end: Int32
    }

    /// The text as given, trimmed.
    public let text: String
    /// Spans by weekday, Monday first.
    let week: [[Span]]

    public var description: String { text }

    /// What the parser accepts, for error messages and documentation.
    public static let grammar = """
        rules joined by ";": "24/7", or optional days then times or "off". Days: Mo Tu We Th Fr Sa Su, \
        ranges (Mo-Fr, wrapping Fr-Mo allowed) and lists (Sa,Su). Times: HH:MM-HH:MM, several joined by ",", \
        an end at or before the start reaching past midnight, 24:00 as an end. Later rules replace earlier ones \
        for their days.
        """

    public init(parsing text: String) throws(OpeningHoursError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        self.text = trimmed
        self.week = try OpeningHoursParser.parse(trimmed)
    }

    /// The status at `instant` in the venue's time zone.
    public func status(at instant: Date, in timeZone: TimeZone) -> OpenStatus {
        status(in: LocalWindow(instant: instant, timeZone: timeZone))
    }

    /// The status at the window's instant. Build the window once per time zone and
    /// instant to judge many venues of that zone.
    public func status(in window: LocalWindow) -> OpenStatus {
        let now = window.instant
        let isOpenNow = isOpen(wall: window.wall(now))
        // The status can only change at a span's start or end, or where the clock jumps.
        for boundary in boundaries(in: window) where boundary > now && boundary <= now + LocalWindow.soon {
            let isOpenThen = isOpen(wall: window.wall(boundary))
            if isOpenNow && !isOpenThen { return .closesSoon }
            if !isOpenNow && isOpenThen { return .opensSoon }
        }
        return isOpenNow ? .open : .closed
    }

    /// Whether the schedule is open at a local wall-clock time, in seconds since
    /// 1970-01-01 00:00 of the local calendar.
    public func isOpen(wall: Int64) -> Bool {
        let day = wall.flooredDivision(by: 86_400)
        let second = Int32(wall - day * 86_400)
        for span in week[Self.weekday(ofDay: day)] where span.start <= second && second < span.end {
            return true
        }
        // What yesterday's spans carry past midnight.
        for span in week[Self.weekday(ofDay: day - 1)] where span.end > 86_400 && second + 86_400 < span.end {
            return true
        }
        return false
    }

    /// Instants in the window where a span starts or ends, or the clock jumps.
    private func boundaries(in window: LocalWindow) -> [Int64] {
        var instants: [Int64] = []
        if let transition = window.transition { instants.append(transition) }
        let first = window.wall(window.instant).flooredDivision(by: 86_400) - 1
        let last = window.wall(window.instant + LocalWindow.soon).flooredDivision(by: 86_400)
        for day in first...last {
            for span in week[Self.weekday(ofDay: day)] {
                for second in [span.start, span.end] {
                    instants.append(contentsOf: window.instants(ofWall: day * 86_400 + Int64(second)))
                }
            }
        }
        return instants.sorted()
    }

    /// Monday = 0 for days counted from 1970-01-01, a Thursday.
    static func weekday(ofDay day: Int64) -> Int {
        Int((day + 3).positiveRemainder(7))
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

    public init(instant date: Date, timeZone: TimeZone) {
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

extension Int64 {
    fileprivate func flooredDivision(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }

    fileprivate func positiveRemainder(_ divisor: Int64) -> Int64 {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
