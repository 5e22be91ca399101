import Foundation

/// What evaluating a day needs besides the rules: the place and its time zone, and
/// what one evaluation has worked out already (a status and its next change look at
/// the same days; a zone's offset costs more than a day's timeline).
struct EvaluationContext {
    var place: OpeningHoursPlace
    var timeZone: TimeZone
    let memo = Memo()

    final class Memo {
        var timelines: [Int64: DayTimeline] = [:]
        var offsets: [Int: Int64] = [:]
    }

    init(place: OpeningHoursPlace, timeZone: TimeZone) {
        self.place = place
        self.timeZone = timeZone
    }

    /// The zone's offset on a local day, taken at its noon (clocks change at night,
    /// before any dawn).
    func offset(day: Int) -> Int64 {
        if let known = memo.offsets[day] { return known }
        let noon = Int64(day) * 86_400 + 43_200
        let offset = Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(noon))))
        memo.offsets[day] = offset
        return offset
    }

    /// A time of day in minutes from the local midnight of `day`. The reference asks
    /// SunCalc at the instant it evaluates, which picks the solar day: a range's start
    /// is asked at midnight (the day before's event), its end within the day (`atNoon`).
    func minutes(of point: TimePoint, day: Int, atNoon: Bool = false) -> Int {
        switch point {
        case .clock(let minutes):
            return minutes
        case .sun(let event, let shift):
            guard let latitude = place.latitude, let longitude = place.longitude else { return event.fallbackMinutes + shift }
            // Computed from the day's local midnight, as the reference does (SunCalc
            // picks its solar day from the instant it is given).
            let offset = self.offset(day: day)
            let asked = Int64(day) * 86_400 + (atNoon ? 43_200 : 0) - offset
            guard let instant = SunTimes.instant(of: event, latitude: latitude, longitude: longitude, near: asked) else {
                return event.fallbackMinutes + shift
            }
            // Its local time of day (from midnight, SunCalc gives the day before's
            // event: the reference takes its time of day, a minute or two off today's).
            let local = instant + offset
            return Int((local - local.floorDiv(86_400) * 86_400) / 60) + shift
        }
    }
}

extension Int64 {
    func floorDiv(_ divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
