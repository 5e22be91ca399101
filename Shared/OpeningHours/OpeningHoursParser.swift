/// Reads the `opening_hours` subset into a week of spans.
enum OpeningHoursParser {
    static let days = ["mo", "tu", "we", "th", "fr", "sa", "su"]
    static let maxLength = 500

    static func parse(_ text: String) throws(OpeningHoursError) -> [[OpeningHours.Span]] {
        guard !text.isEmpty else { throw fail("hours is empty") }
        guard text.unicodeScalars.count <= maxLength else { throw fail("hours is longer than \(maxLength) characters") }
        var week = [[OpeningHours.Span]](repeating: [], count: 7)
        for rawRule in text.split(separator: ";", omittingEmptySubsequences: false) {
            let rule = rawRule.trimmingCharacters(in: .whitespaces)
            guard !rule.isEmpty else { throw fail("hours has an empty rule between ';'") }
            let (days, spans) = try parseRule(rule)
            // A later rule replaces what earlier rules said about its days.
            for day in days { week[day] = spans }
        }
        return week
    }

    /// The days a rule names and the spans it gives them (empty for "off").
    private static func parseRule(_ rule: String) throws(OpeningHoursError) -> ([Int], [OpeningHours.Span]) {
        if rule == "24/7" {
            return (Array(0..<7), [OpeningHours.Span(start: 0, end: 86_400)])
        }
        let words = rule.split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        let days: [Int]
        let schedule: String
        switch words.count {
        case 1:
            days = Array(0..<7)
            schedule = words[0]
        case 2:
            days = try parseDays(words[0])
            schedule = words[1]
        default:
            throw fail("cannot read the rule \"\(rule)\": expected days, then times or \"off\"")
        }
        if ["off", "closed"].contains(schedule.lowercased()) { return (days, []) }
        var spans: [OpeningHours.Span] = []
        for part in schedule.split(separator: ",", omittingEmptySubsequences: false) {
            spans.append(try parseSpan(String(part)))
        }
        return (days, spans)
    }

    private static func parseDays(_ text: String) throws(OpeningHoursError) -> [Int] {
        var result: [Int] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let ends = part.split(separator: "-", omittingEmptySubsequences: false)
            guard ends.count == 1 || ends.count == 2 else { throw fail("cannot read the days \"\(text)\"") }
            let first = try day(String(ends[0]))
            let last = ends.count == 2 ? try day(String(ends[1])) : first
            // Ranges may wrap over the weekend: Fr-Mo is Fr, Sa, Su, Mo.
            var index = first
            while true {
                if !result.contains(index) { result.append(index) }
                if index == last { break }
                index = (index + 1) % 7
            }
        }
        return result
    }

    private static func day(_ text: String) throws(OpeningHoursError) -> Int {
        guard let index = days.firstIndex(of: text.lowercased()) else {
            throw fail("\"\(text)\" is not a day: use Mo, Tu, We, Th, Fr, Sa or Su")
        }
        return index
    }

    private static func parseSpan(_ text: String) throws(OpeningHoursError) -> OpeningHours.Span {
        let ends = text.split(separator: "-", omittingEmptySubsequences: false)
        guard ends.count == 2 else { throw fail("cannot read the times \"\(text)\": expected HH:MM-HH:MM") }
        let start = try time(String(ends[0]), allowing24: false)
        var end = try time(String(ends[1]), allowing24: true)
        if end <= start {
            // An end at or before the start reaches past midnight (18:00-02:00);
            // 00:00-00:00 is the whole day.
            guard end < start || start == 0 else {
                throw fail("the times \"\(text)\" start and end at the same moment")
            }
            end += 86_400
        }
        return OpeningHours.Span(start: start, end: end)
    }

    /// Seconds since midnight of `HH:MM`.
    private static func time(_ text: String, allowing24: Bool) throws(OpeningHoursError) -> Int32 {
        let bytes = Array(text.utf8)
        guard bytes.count == 5, bytes[2] == UInt8(ascii: ":"),
              let hours = Int32(String(decoding: bytes[0..<2], as: UTF8.self)),
              let minutes = Int32(String(decoding: bytes[3..<5], as: UTF8.self)),
              bytes[0..<2].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), bytes[3..<5].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              minutes < 60, hours < 24 || (allowing24 && hours == 24 && minutes == 0)
        else {
            throw fail("\"\(text)\" is not a time: use HH:MM from 00:00 to 23:59 (24:00 as an end)")
        }
        return hours * 3600 + minutes * 60
    }

    private static func fail(_ message: String) -> OpeningHoursError {
        OpeningHoursError(message: message)
    }
}
