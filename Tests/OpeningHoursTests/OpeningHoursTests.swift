import Foundation
import OpeningHours
import Testing

/// A local wall-clock time in a zone, as an instant. The week of 2026-11-23 starts
/// on a Monday; Berlin's clocks spring forward on 2026-03-29 and fall back on
/// 2026-10-25 (both Sundays).
private func at(_ local: String, _ zone: String = "Europe/Berlin") -> Date {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: zone)!
    formatter.dateFormat = "yyyy-MM-dd HH:mm"
    return formatter.date(from: local)!
}

/// An instant given in UTC, for the hours a daylight-saving switch makes ambiguous.
private func utc(_ text: String) -> Date {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")!
    formatter.dateFormat = "yyyy-MM-dd HH:mm"
    return formatter.date(from: text)!
}

struct HoursCase: Sendable, CustomTestStringConvertible {
    let hours: String
    let instant: Date
    let zone: String
    let expected: OpenStatus
    let note: String
    var testDescription: String { "\(hours) at \(note) → \(expected.rawValue)" }

    init(_ hours: String, _ instant: Date, _ expected: OpenStatus, _ note: String, zone: String = "Europe/Berlin") {
        self.hours = hours
        self.instant = instant
        self.expected = expected
        self.note = note
        self.zone = zone
    }
}

@Suite("Opening hours")
struct OpeningHoursTests {
    static let cases: [HoursCase] = [
        HoursCase("24/7", at("2026-11-25 03:17"), .open, "any time"),
        HoursCase("Mo-Fr 09:00-17:00", at("2026-11-23 10:00"), .open, "Monday morning"),
        HoursCase("Mo-Fr 09:00-17:00", at("2026-11-23 16:30"), .closesSoon, "30 minutes before closing"),
        HoursCase("Mo-Fr 09:00-17:00", at("2026-11-23 16:29"), .open, "31 minutes before closing"),
        HoursCase("Mo-Fr 09:00-17:00", at("2026-11-23 08:30"), .opensSoon, "30 minutes before opening"),
        HoursCase("Mo-Fr 09:00-17:00", at("2026-11-23 08:29"), .closed, "31 minutes before opening"),
        HoursCase("Mo-Fr 09:00-17:00", at("2026-11-23 17:00"), .closed, "at closing time"),
        HoursCase("Mo-Fr 09:00-17:00", at("2026-11-28 10:00"), .closed, "Saturday"),
        HoursCase("Mo-Fr 11:00-14:00,17:00-22:00", at("2026-11-24 15:00"), .closed, "between two ranges"),
        HoursCase("Mo-Fr 11:00-14:00,17:00-22:00", at("2026-11-24 16:45"), .opensSoon, "before the second range"),
        HoursCase("Mo-Fr 11:00-14:00,17:00-22:00", at("2026-11-24 13:45"), .closesSoon, "end of the first range"),
        // As the reference reads it: "Su off" closes all of Sunday, the hours Saturday carries past midnight too.
        HoursCase("Sa 18:00-02:00; Su off", at("2026-11-29 01:00"), .closed, "Sunday 01:00, closed by Sunday's own rule"),
        HoursCase("Sa 18:00-02:00", at("2026-11-29 01:00"), .open, "Sunday 01:00, from Saturday's range"),
        HoursCase("Sa 18:00-02:00", at("2026-11-29 01:45"), .closesSoon, "Sunday 01:45"),
        HoursCase("Mo-Fr 09:00-17:00; Sa unknown", at("2026-11-28 12:00"), .unknown, "a day the hours say they do not know"),
        HoursCase("Mo-Fr 09:00-17:00; Sa \"by appointment\"", at("2026-11-28 12:00"), .unknown, "a rule that only comments"),
        HoursCase("Mo-Sa 18:00+", at("2026-11-28 20:00"), .openEnd, "an open end: maybe still open"),
        HoursCase("Mo-Sa 18:00+", at("2026-11-28 17:45"), .closed, "before an open end: never opens soon for sure"),
        HoursCase("Sa 18:00-02:00; Su off", at("2026-11-29 03:00"), .closed, "Sunday 03:00"),
        HoursCase("Sa 18:00-02:00; Su off", at("2026-11-28 17:40"), .opensSoon, "Saturday 17:40"),
        HoursCase("Su 20:00-03:00", at("2026-11-23 02:00"), .open, "Monday 02:00, from Sunday's range"),
        HoursCase("Su 20:00-03:00", at("2026-11-23 02:40"), .closesSoon, "Monday 02:40"),
        HoursCase("Su 20:00-03:00", at("2026-11-29 19:59"), .opensSoon, "Sunday 19:59"),
        HoursCase("Fr-Mo 10:00-12:00", at("2026-11-29 11:00"), .open, "Sunday inside a wrapping day range"),
        HoursCase("Fr-Mo 10:00-12:00", at("2026-11-25 11:00"), .closed, "Wednesday outside it"),
        HoursCase("Fr-Mo 10:00-12:00", at("2026-11-27 09:45"), .opensSoon, "Friday, where the wrapping range begins"),
        HoursCase("Mo-Th 09:00-17:00; Fr 09:00-13:00", at("2026-11-27 14:00"), .closed, "Friday's own shorter hours"),
        HoursCase("Mo-Su 00:00-24:00", at("2026-11-23 23:50"), .open, "midnight between open days is no closing"),
        HoursCase("24/7; Su off", at("2026-11-29 12:00"), .closed, "Sunday, overridden"),
        HoursCase("24/7; Su off", at("2026-11-28 23:45"), .closesSoon, "Saturday before midnight"),
        HoursCase("Mo-Fr 09:00-17:00; We 12:00-14:00", at("2026-11-25 10:00"), .closed, "Wednesday replaced by a later rule"),
        HoursCase("Mo-Fr 09:00-17:00; We 12:00-14:00", at("2026-11-25 13:00"), .open, "Wednesday's own hours"),
        HoursCase("Mo-Fr 09:00-17:00; We 12:00-14:00", at("2026-11-26 10:00"), .open, "Thursday keeps the first rule"),
        HoursCase("off", at("2026-11-23 12:00"), .closed, "always closed"),
        HoursCase("10:00-20:00", at("2026-11-28 10:00"), .open, "no days means every day"),
        HoursCase("Mo 09:00-12:00,11:00-14:00", at("2026-11-23 11:45"), .open, "overlapping ranges join"),
        HoursCase("Mo 09:00-12:00,12:00-14:00", at("2026-11-23 11:45"), .open, "touching ranges join"),
        HoursCase("Mo 20:00-24:00", at("2026-11-23 23:45"), .closesSoon, "24:00 as the end"),
        HoursCase("Mo 20:00-24:00", at("2026-11-24 00:10"), .closed, "after a 24:00 end"),
        HoursCase("mo-fr 09:00-17:00 ; sa closed", at("2026-11-23 10:00"), .open, "lower-case days, spaced rules"),
        // Spring forward: Sunday 2026-03-29, 02:00 CET becomes 03:00 CEST.
        HoursCase("Su 01:00-02:30", at("2026-03-29 01:31"), .closesSoon, "02:30 is skipped: closed at the jump, 29 minutes away"),
        HoursCase("Su 01:00-02:30", at("2026-03-29 01:20"), .open, "the jump is 40 minutes away"),
        HoursCase("Su 03:00-10:00", at("2026-03-29 01:45"), .opensSoon, "03:00 comes 15 minutes after 01:45"),
        HoursCase("Su 03:00-10:00", at("2026-03-29 01:20"), .closed, "40 minutes before 03:00"),
        // Fall back: Sunday 2026-10-25, 03:00 CEST becomes 02:00 CET; 02:00-02:59 happens twice.
        HoursCase("Su 00:00-02:30", utc("2026-10-25 00:10"), .closesSoon, "02:10 CEST, first time round"),
        HoursCase("Su 00:00-02:30", utc("2026-10-25 00:45"), .opensSoon, "02:45 CEST: the clock goes back to 02:00 in 15 minutes"),
        HoursCase("Su 01:00-04:00", utc("2026-10-25 00:50"), .open, "02:50 CEST, open through the repeated hour"),
        HoursCase("Su 02:45-04:00", utc("2026-10-25 00:50"), .closesSoon,
                  "02:50 CEST: judged by the wall clock, which reads 02:00 again in 10 minutes"),
        HoursCase("Mo-Fr 09:00-17:00", at("2026-11-23 12:00", "America/New_York"), .open, "noon in New York",
                  zone: "America/New_York"),
        HoursCase("Mo-Fr 09:00-17:00", at("2026-11-23 12:00", "America/New_York"), .closed, "the same instant is 18:00 in Berlin"),
    ]

    @Test("status at an instant, in the venue's time zone", arguments: cases)
    func status(_ example: HoursCase) throws {
        let hours = try OpeningHours(parsing: example.hours)
        #expect(hours.status(at: example.instant, in: TimeZone(identifier: example.zone)!) == example.expected)
    }

    @Test("the table reaches every status, every day of the week and both daylight-saving switches")
    func tableCoverage() throws {
        #expect(Set(Self.cases.map(\.expected)) == Set(OpenStatus.allCases))
        var calendar = Calendar(identifier: .gregorian)
        let weekdays = Set(Self.cases.map { example in
            calendar.timeZone = TimeZone(identifier: example.zone)!
            return calendar.component(.weekday, from: example.instant)
        })
        #expect(weekdays == Set(1...7))
        let berlin = try #require(TimeZone(identifier: "Europe/Berlin"))
        // Some case within a day of each switch in 2026 (29 March, 25 October).
        for switchDay in [at("2026-03-29 12:00"), at("2026-10-25 12:00")] {
            #expect(Self.cases.contains { $0.zone == berlin.identifier && abs($0.instant.timeIntervalSince(switchDay)) < 24 * 3600 })
        }
    }

    @Test("strings outside the grammar are refused with a reason", arguments: [
        "", "   ", "Mo 09:00-49:00", "Xx 09:00-10:00", "Mo 24:00-02:00", "Mo 09:60-10:00", "Mo-Fr-Sa 09:00-10:00",
        "Mo 0900-1700", "Mo[6] 10:00-12:00", "week 54", "Jan 32", "Mo 10:00-12:00 \"open", "|| Mo", "Mo 10:00",
        "Mo 10:00-12:00 | Tu", "Mo 10:00-12:00/00:30", "Zz", "Mo 10:00-", "Dec 24-",
        String(repeating: "Mo 09:00-10:00;", count: 40),
    ])
    func refused(text: String) {
        #expect(throws: OpeningHoursError.self) { try OpeningHours(parsing: text) }
    }

    @Test("one window serves many venues of a zone")
    func sharedWindow() throws {
        let window = LocalWindow(instant: at("2026-11-23 16:45"), timeZone: TimeZone(identifier: "Europe/Berlin")!)
        #expect(try OpeningHours(parsing: "Mo-Fr 09:00-17:00").status(in: window) == .closesSoon)
        #expect(try OpeningHours(parsing: "Mo 17:00-23:00").status(in: window) == .opensSoon)
        #expect(try OpeningHours(parsing: "Sa,Su 10:00-18:00").status(in: window) == .closed)
    }
}
