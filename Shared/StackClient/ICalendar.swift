import Contracts
import Foundation
import Wire

/// An all-day event as RFC 5545 iCalendar text: what `here trip ics` writes and
/// `GET /v1/trips/{id}/calendar.ics` serves, so a trip lands in any calendar app.
public struct ICalendarEvent: Sendable {
    /// Stable across exports, so re-importing updates the event instead of doubling it.
    public var uid: String
    public var stamp: Date
    public var firstDay: LocalDate
    /// The last day of the trip (inclusive); written as the exclusive end RFC 5545 wants.
    public var lastDay: LocalDate
    public var summary: String
    public var location: String?
    public var description: String?
    public var geo: (lat: Double, lon: Double)?

    public init(uid: String, stamp: Date, firstDay: LocalDate, lastDay: LocalDate, summary: String, location: String? = nil,
                description: String? = nil, geo: (lat: Double, lon: Double)? = nil) {
        self.uid = uid
        self.stamp = stamp
        self.firstDay = firstDay
        self.lastDay = lastDay
        self.summary = summary
        self.location = location
        self.description = description
        self.geo = geo
    }

    /// The calendar: CRLF line ends, text escaped, lines folded at 75 octets.
    public var text: String {
        var lines = ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//Hereabouts//here//EN", "CALSCALE:GREGORIAN", "BEGIN:VEVENT",
                     "UID:" + Self.escape(uid), "DTSTAMP:" + Self.utc(stamp),
                     "DTSTART;VALUE=DATE:" + Self.date(firstDay), "DTEND;VALUE=DATE:" + Self.date(Self.dayAfter(lastDay)),
                     "SUMMARY:" + Self.escape(summary)]
        if let location { lines.append("LOCATION:" + Self.escape(location)) }
        if let geo { lines.append("GEO:\(geo.lat);\(geo.lon)") }
        if let description { lines.append("DESCRIPTION:" + Self.escape(description)) }
        lines += ["END:VEVENT", "END:VCALENDAR"]
        return lines.map(Self.fold).joined(separator: "\r\n") + "\r\n"
    }

    /// TEXT values: backslash, semicolon and comma escaped, newlines as `\n`.
    static func escape(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "\\": out += "\\\\"
            case ";": out += "\\;"
            case ",": out += "\\,"
            case "\n", "\r\n": out += "\\n"
            case "\r": break
            default: out.append(character)
            }
        }
        return out
    }

    /// Lines longer than 75 octets continue on the next line after a space, never
    /// inside a UTF-8 sequence.
    static func fold(_ line: String) -> String {
        var folded = "", current = 0
        for scalar in line.unicodeScalars {
            let size = String(scalar).utf8.count
            // The first line holds 75 octets; each continuation 74 after its leading space.
            if current + size > 75 {
                folded += "\r\n "
                current = 1
            }
            folded.unicodeScalars.append(scalar)
            current += size
        }
        return folded
    }

    static func date(_ day: LocalDate) -> String {
        String(format: "%04d%02d%02d", day.year, day.month, day.day)
    }

    static func dayAfter(_ day: LocalDate) -> LocalDate {
        let (year, month, dayOfMonth) = Timestamp.civilDate(fromDays: day.dayNumber + 1)
        return LocalDate(year: year, month: month, day: dayOfMonth) ?? day
    }

    static func utc(_ instant: Date) -> String {
        // 2026-11-22T10:00:00Z → 20261122T100000Z
        Timestamp.format(instant).filter { $0 != "-" && $0 != ":" }
    }
}

extension ICalendarEvent {
    /// A trip as the all-day event it spans; nil for a trip without dates.
    public init?(trip: Trip) {
        guard let start = trip.start, let end = trip.end else { return nil }
        self.init(uid: "\(trip.id)@hereabouts", stamp: trip.createdAt, firstDay: start, lastDay: end, summary: trip.title,
                  location: "\(trip.city), \(trip.countryCode)", geo: trip.lat.flatMap { lat in trip.lon.map { (lat, $0) } })
    }
}
