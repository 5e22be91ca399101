/// Writes rules in the specification's standard spelling: what a tolerant form
/// (`Mon-Fri 8-18`, `8:00 - 18:00`) means, as it should have been written.
enum Normalizer {
    static let weekdays = ["Mo", "Tu", "We", "Th", "Fr", "Sa", "Su"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    static func text(of rules: [Rule]) -> String {
        var text = ""
        for (index, rule) in rules.enumerated() {
            if index > 0 {
                text += rule.isAdditional ? ", " : (rule.isFallback && !rules[index - 1].isFallback ? " || " : "; ")
            }
            text += self.text(of: rule)
        }
        return text
    }

    static func text(of rule: Rule) -> String {
        var parts: [String] = []
        if rule.isAlways { parts.append("24/7") }
        if !rule.years.isEmpty { parts.append(rule.years.map(text(of:)).joined(separator: ",")) }
        for group in rule.monthdays { parts.append(group.map(text(of:)).joined(separator: ",")) }
        if !rule.weeks.isEmpty { parts.append("week " + rule.weeks.map(text(of:)).joined(separator: ",")) }
        if !rule.holidays.isEmpty { parts.append(rule.holidays.map(text(of:)).joined(separator: " ")) }
        if !rule.weekdays.isEmpty { parts.append(rule.weekdays.map(text(of:)).joined(separator: ",")) }
        if !rule.times.isEmpty { parts.append(rule.times.map(text(of:)).joined(separator: ",")) }
        switch rule.modifier {
        case .open?: parts.append("open")
        case .closed?: parts.append("off")
        case .unknown?: parts.append("unknown")
        case nil: break
        }
        if let comment = rule.comment { parts.append("\"\(comment)\"") }
        return parts.joined(separator: " ")
    }

    private static func two(_ number: Int) -> String {
        number < 10 ? "0\(number)" : "\(number)"
    }

    private static func text(of range: YearRange) -> String {
        if range.to == Int.max { return "\(range.from)+" }
        if range.to == range.from { return "\(range.from)" }
        return "\(range.from)-\(range.to)" + (range.period > 1 ? "/\(range.period)" : "")
    }

    private static func text(of range: WeekRange) -> String {
        if range.to == range.from { return two(range.from) }
        return "\(two(range.from))-\(two(range.to))" + (range.period > 1 ? "/\(range.period)" : "")
    }

    private static func text(of range: MonthdayRange) -> String {
        switch range {
        case .months(let fromYear, let from, let toYear, let to):
            let start = (fromYear.map { "\($0) " } ?? "") + months[from - 1]
            if from == to && fromYear == toYear { return start }
            let end = (toYear != fromYear ? toYear.map { "\($0) " } ?? "" : "") + months[to - 1]
            return start + "-" + end
        case .dates(let from, let to, let openEnd, let period):
            let period = period > 1 ? "/\(period)" : ""
            var text = self.text(of: from)
            if let to {
                if to.year == from.year, to.weekdayShift == nil, to.dayOffset == 0,
                   case .fixed(let month, let day) = to.base, case .fixed(month, _) = from.base {
                    text += "-" + two(day) + period
                } else {
                    text += "-" + self.text(of: to) + period
                }
            } else if openEnd {
                text += "+"
            }
            return text
        }
    }

    private static func text(of point: DatePoint) -> String {
        var text = point.year.map { "\($0) " } ?? ""
        switch point.base {
        case .fixed(let month, let day): text += "\(months[month - 1]) \(two(day))"
        case .easter: text += "easter"
        case .nthWeekday(let month, let weekday, let nth): text += "\(months[month - 1]) \(weekdays[weekday])[\(nth)]"
        }
        if let shift = point.weekdayShift { text += " \(shift.forward ? "+" : "-")\(weekdays[shift.weekday])" }
        text += offset(point.dayOffset)
        return text
    }

    private static func offset(_ days: Int) -> String {
        guard days != 0 else { return "" }
        return " \(days > 0 ? "+" : "-")\(abs(days)) day" + (abs(days) == 1 ? "" : "s")
    }

    private static func text(of selector: DaySelector) -> String {
        switch selector {
        case .weekdays(let from, let to, let nth, let offset):
            var text = weekdays[from] + (to != from ? "-" + weekdays[to] : "")
            if !nth.isEmpty {
                text += "[" + nth.map { $0.count == 1 ? "\($0.lowerBound)" : "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",") + "]"
                text += self.offset(offset)
            }
            return text
        case .holiday(let kind, let offset):
            return kind.rawValue + self.offset(offset)
        }
    }

    private static func text(of span: TimeSpan) -> String {
        var text = self.text(of: span.start)
        if let end = span.end { text += "-" + self.text(of: end) }
        if span.openEnd { text += "+" }
        return text
    }

    private static func text(of point: TimePoint) -> String {
        switch point {
        case .clock(let minutes): return "\(two(minutes / 60)):\(two(minutes % 60))"
        case .sun(let event, 0): return event.rawValue
        case .sun(let event, let offset):
            return "(\(event.rawValue)\(offset < 0 ? "-" : "+")\(two(abs(offset) / 60)):\(two(abs(offset) % 60)))"
        }
    }
}
