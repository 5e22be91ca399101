/// Reads `opening_hours` tokens into rules. Like the reference, a rule's selectors may
/// come in any order; a `,` after a rule's modifier, comment or times, not followed by
/// more of the same, starts an additional rule.
struct Parser {
    static let maxLength = 500

    private let tokens: [Token]
    private var at = 0

    static func parse(_ text: String) throws(OpeningHoursError) -> [Rule] {
        guard text.unicodeScalars.count <= maxLength else {
            throw OpeningHoursError(message: "hours is longer than \(maxLength) characters")
        }
        do {
            var parser = Parser(tokens: try Tokenizer.tokens(text))
            return try parser.nonEmptyRules()
        } catch {
            // The tolerant forms (`Mon-Fri 8am-6pm`, `lundi`), read as the reference reads
            // them; when they do not help either, the strict reading's reason is the clearer.
            // Words first; phrases (`by appointment`, `open end`) cost more to look for.
            for reading in [{ text }, { Corrections.rewritingPhrases(text) }] {
                var tolerant = Parser(tokens: (try? Tokenizer.tokens(reading(), tolerant: true)) ?? [])
                if let rules = try? tolerant.nonEmptyRules() { return rules }
            }
            throw error
        }
    }

    private mutating func nonEmptyRules() throws(OpeningHoursError) -> [Rule] {
        let rules = try rules()
        guard !rules.isEmpty else { throw OpeningHoursError(message: "hours is empty") }
        return rules
    }

    private init(tokens: [Token]) {
        self.tokens = tokens
    }

    // MARK: Rules

    private mutating func rules() throws(OpeningHoursError) -> [Rule] {
        var rules: [Rule] = []
        var isFallback = false
        var isAdditional = false
        while at < tokens.count {
            if isSymbol(";") {
                // An empty rule (`…;;` or a trailing `;`): the reference warns and reads on.
                at += 1
                isAdditional = false
                continue
            }
            if isSymbol("|") {
                guard !rules.isEmpty else { throw failure("the value starts with \"||\"") }
                at += 1
                isFallback = true
                isAdditional = false
                continue
            }
            var rule = Rule()
            rule.isFallback = isFallback
            rule.isAdditional = isAdditional
            isAdditional = try parseRule(into: &rule)
            rules.append(rule)
            if !isAdditional, at < tokens.count {
                if isSymbol(";") {
                    isFallback = false
                } else if !isSymbol("|") {
                    throw failure("unexpected \(describe(tokens[at]))")
                }
            }
        }
        return rules
    }

    /// Reads one rule; true when a `,` ended it and an additional rule follows.
    private mutating func parseRule(into rule: inout Rule) throws(OpeningHoursError) -> Bool {
        let first = at
        while let token = peek() {
            switch token.kind {
            case .symbol(";"), .symbol("|"):
                guard at > first else { throw failure("a rule is empty") }
                return false
            case .number(24, _) where isSymbol("/", at + 1) && isNumber(7, at + 2):
                rule.isAlways = true
                at += 3
            case .word(.weekday), .word(.holiday):
                let group = try dayGroup()
                if group.contains(where: { if case .weekdays = $0 { true } else { false } }) {
                    rule.weekdays += group
                } else {
                    rule.holidays += group
                }
            case .word(.month), .word(.easter):
                rule.monthdays.append(try monthdays())
            case .number(let value, let digits) where digits == 4 && value >= 1900 && !isSymbol(":", at + 1):
                if isMonthOrEaster(at + 1) || (isSymbol("-", at + 1) && isYear(at + 2) && isMonthOrEaster(at + 3)) {
                    rule.monthdays.append(try monthdays())
                } else {
                    rule.years += try years()
                }
            case .word(.week):
                rule.weeks += try weeks()
            case .symbol(":"):
                // The separator for readability between wide and small selectors.
                at += 1
            case .number, .word(.sun), .symbol("("):
                if try times(into: &rule) { return true }
            case .word(.state(let state)):
                rule.modifier = state
                at += 1
                if isSymbol(",") { at += 1; return true }
            case .comment(let text):
                rule.comment = text
                at += 1
                if isSymbol(",") { at += 1; return true }
            default:
                throw failure("unexpected \(describe(token))")
            }
        }
        return false
    }

    // MARK: Days

    /// Weekdays and holidays joined by `,`: one group, matching when any entry does.
    private mutating func dayGroup() throws(OpeningHoursError) -> [DaySelector] {
        var group: [DaySelector] = []
        repeat {
            guard let token = peek() else { throw failure("the days end early") }
            switch token.kind {
            case .word(.weekday(let from)):
                at += 1
                var to = from
                if isSymbol("-"), case .word(.weekday(let last))? = peek(at + 1)?.kind {
                    to = last
                    at += 2
                }
                var nth: [ClosedRange<Int>] = []
                var offset = 0
                if isSymbol("[") {
                    at += 1
                    nth = try nthList()
                    offset = try dayOffset() ?? 0
                }
                group.append(.weekdays(from: from, to: to, nth: nth, offset: offset))
            case .word(.holiday(let kind)):
                at += 1
                group.append(.holiday(kind, offset: try dayOffset() ?? 0))
            default:
                throw failure("expected a weekday or PH/SH, found \(describe(token))")
            }
        } while consumeComma(if: { parser, next in
            switch parser.peek(next)?.kind {
            case .word(.weekday)?, .word(.holiday)?: true
            default: false
            }
        })
        return group
    }

    /// `1`, `1-2`, `-1` entries up to `]`.
    private mutating func nthList() throws(OpeningHoursError) -> [ClosedRange<Int>] {
        var list: [ClosedRange<Int>] = []
        repeat {
            let negative = isSymbol("-")
            if negative { at += 1 }
            guard case .number(let first, _)? = peek()?.kind, (1...5).contains(first) else {
                throw failure("expected a weekday's occurrence in the month, 1 to 5 or -1 to -5")
            }
            at += 1
            var last = first
            if !negative, isSymbol("-"), case .number(let end, _)? = peek(at + 1)?.kind {
                guard (first...5).contains(end) else { throw failure("the occurrences \(first)-\(end) are not a range within 1-5") }
                last = end
                at += 2
            }
            list.append(negative ? -first ... -first : first...last)
        } while consumeComma(if: { parser, next in parser.isNumberAt(next) || parser.isSymbol("-", next) })
        guard isSymbol("]") else { throw failure("expected \"]\" after a weekday's occurrences") }
        at += 1
        return list
    }

    /// ` +2 days`, ` -1 day`, when one follows.
    private mutating func dayOffset() throws(OpeningHoursError) -> Int? {
        guard isSymbol("+") || isSymbol("-"), case .number(let days, _)? = peek(at + 1)?.kind,
              case .word(.day)? = peek(at + 2)?.kind else { return nil }
        guard days <= 366 else { throw failure("an offset of \(days) days is more than a year") }
        let sign = isSymbol("-") ? -1 : 1
        at += 3
        return sign * days
    }

    // MARK: Wide ranges

    private mutating func years() throws(OpeningHoursError) -> [YearRange] {
        var ranges: [YearRange] = []
        repeat {
            let from = try year()
            var range = YearRange(from: from, to: from)
            if isSymbol("+") {
                range.to = Int.max
                at += 1
            } else if isSymbol("/"), case .number(let period, _)? = peek(at + 1)?.kind, period >= 1 {
                // `2055/2`: from 2055, every second year.
                range = YearRange(from: from, to: Int.max, period: period)
                at += 2
            } else if isSymbol("-"), isYear(at + 1) {
                at += 1
                range.to = try year()
                guard range.to >= range.from else { throw failure("the years \(range.from)-\(range.to) run backwards") }
                range.period = try period() ?? 1
            }
            ranges.append(range)
        } while consumeComma(if: { parser, next in parser.isYear(next) && !parser.isMonthOrEaster(next + 1) })
        return ranges
    }

    private mutating func weeks() throws(OpeningHoursError) -> [WeekRange] {
        at += 1 // "week"
        var ranges: [WeekRange] = []
        repeat {
            if case .word(.week)? = peek()?.kind { at += 1 } // `week 01,week 03`
            let from = try weekNumber()
            var range = WeekRange(from: from, to: from)
            if isSymbol("-") {
                at += 1
                range.to = try weekNumber()
                range.period = try period() ?? 1
            }
            ranges.append(range)
        } while consumeComma(if: { parser, next in
            if case .word(.week)? = parser.peek(next)?.kind { return true }
            guard case .number(_, let digits)? = parser.peek(next)?.kind else { return false }
            return digits <= 2 && (!parser.isSymbol(":", next + 1) || parser.tokens[next + 1].spaceAfter)
        })
        return ranges
    }

    private mutating func weekNumber() throws(OpeningHoursError) -> Int {
        guard case .number(let week, _)? = peek()?.kind, (1...53).contains(week) else {
            throw failure("expected a week number from 1 to 53")
        }
        at += 1
        return week
    }

    /// `/2` after a range.
    private mutating func period() throws(OpeningHoursError) -> Int? {
        guard isSymbol("/") else { return nil }
        guard case .number(let period, _)? = peek(at + 1)?.kind, period >= 1 else { throw failure("expected a period after \"/\"") }
        at += 2
        return period
    }

    private mutating func monthdays() throws(OpeningHoursError) -> [MonthdayRange] {
        var ranges: [MonthdayRange] = []
        var month: (year: Int?, month: Int)?
        repeat {
            if let month, isDay(at) {
                // `Dec 11,15-17,24`: more days of the month before.
                ranges.append(try dayList(year: month.year, month: month.month))
            } else {
                let range = try monthdayRange()
                ranges.append(range)
                if case .dates(let from, _, _, _) = range, case .fixed(let fixedMonth, _) = from.base {
                    month = (from.year, fixedMonth)
                } else {
                    month = nil
                }
            }
        } while consumeComma(if: { parser, next in
            parser.isMonthOrEaster(next) || (parser.isYear(next) && parser.isMonthOrEaster(next + 1))
                || (month != nil && parser.isDay(next))
        })
        return ranges
    }

    /// `15`, `15-17`, `19-23/2` in a month named before.
    private mutating func dayList(year: Int?, month: Int) throws(OpeningHoursError) -> MonthdayRange {
        guard case .number(let first, _)? = peek()?.kind else { throw failure("expected a day of the month") }
        at += 1
        let from = DatePoint(year: year, base: .fixed(month: month, day: first))
        guard isSymbol("-"), isDay(at + 1), case .number(let last, _)? = peek(at + 1)?.kind else {
            return .dates(from: from, to: nil, openEnd: false)
        }
        at += 2
        return .dates(from: from, to: DatePoint(year: year, base: .fixed(month: month, day: last)), openEnd: false,
                      period: try period() ?? 1)
    }

    private mutating func monthdayRange() throws(OpeningHoursError) -> MonthdayRange {
        let fromYear = isYear(at) ? try year() : nil
        if case .word(.month(let month))? = peek()?.kind, !isDay(at + 1), !isNthWeekday(at + 1) {
            // Whole months: `Jan`, `Jan-Mar`, `2013 Nov-2014 Jan`.
            at += 1
            guard isSymbol("-"), isMonthRangeEnd(at + 1) else {
                return .months(fromYear: fromYear, from: month, toYear: fromYear, to: month)
            }
            at += 1
            let toYear = isYear(at) ? try year() : fromYear
            guard case .word(.month(let last))? = peek()?.kind else { throw failure("expected a month") }
            at += 1
            return .months(fromYear: fromYear, from: month, toYear: toYear, to: last)
        }
        let from = try datePoint(year: fromYear)
        if isSymbol("+"), !isTimeAhead(at + 1), !isDayOffsetAhead(at) {
            at += 1
            return .dates(from: from, to: nil, openEnd: true)
        }
        guard isSymbol("-"), !isDayOffsetAhead(at) else { return .dates(from: from, to: nil, openEnd: false) }
        at += 1
        if case .number(let day, _)? = peek()?.kind, isDay(at), case .fixed(let month, _) = from.base {
            // `Dec 24-26`: the end in the start's month.
            at += 1
            var to = DatePoint(year: from.year, base: .fixed(month: month, day: day))
            to.dayOffset = try dayOffset() ?? 0
            return .dates(from: from, to: to, openEnd: false, period: try period() ?? 1)
        }
        let toYear = isYear(at) ? try year() : nil
        let to = try datePoint(year: toYear)
        return .dates(from: from, to: to, openEnd: false, period: try period() ?? 1)
    }

    /// `Dec 25`, `easter`, each optionally moved: `Dec 25 +We`, `easter -2 days`.
    private mutating func datePoint(year: Int?) throws(OpeningHoursError) -> DatePoint {
        var point: DatePoint
        switch peek()?.kind {
        case .word(.easter)?:
            at += 1
            point = DatePoint(year: year, base: .easter)
        case .word(.month(let month))? where isNthWeekday(at + 1):
            let negative = isSymbol("-", at + 3)
            let nthIndex = negative ? at + 4 : at + 3
            guard case .word(.weekday(let weekday))? = peek(at + 1)?.kind, case .number(let nth, _)? = peek(nthIndex)?.kind,
                  (1...5).contains(nth), isSymbol("]", nthIndex + 1)
            else { throw failure("expected a weekday's occurrence from 1 to 5 or -1 to -5, as Jan Su[-1]") }
            at = nthIndex + 2
            point = DatePoint(year: year, base: .nthWeekday(month: month, weekday: weekday, nth: negative ? -nth : nth))
        case .word(.month(let month))?:
            guard case .number(let day, _)? = peek(at + 1)?.kind, (1...31).contains(day) else {
                throw failure("expected a day of the month after the month")
            }
            guard day <= CivilCalendar.daysInMonth(year: 2000, month: month) else {
                throw failure("\(day) is not a day of month \(month)")
            }
            at += 2
            point = DatePoint(year: year, base: .fixed(month: month, day: day))
        default:
            throw failure("expected a date: a month and a day, or easter")
        }
        if isSymbol("+") || isSymbol("-"), case .word(.weekday(let weekday))? = peek(at + 1)?.kind {
            point.weekdayShift = (weekday, isSymbol("+"))
            at += 2
        }
        point.dayOffset = try dayOffset() ?? 0
        return point
    }

    private mutating func year() throws(OpeningHoursError) -> Int {
        guard case .number(let year, 4)? = peek()?.kind, year >= 1900 else { throw failure("expected a year") }
        at += 1
        return year
    }

    // MARK: Times

    /// Time spans joined by `,`; true when a `,` ended them and an additional rule follows.
    private mutating func times(into rule: inout Rule) throws(OpeningHoursError) -> Bool {
        while true {
            rule.times.append(try timeSpan())
            guard isSymbol(",") else { return false }
            at += 1
            if !isTimeAhead(at) { return true }
        }
    }

    private mutating func timeSpan() throws(OpeningHoursError) -> TimeSpan {
        // `8-18`: hours without minutes, which the reference reads with a warning.
        if case .number(let from, _)? = peek()?.kind, isSymbol("-", at + 1),
           case .number(let to, _)? = peek(at + 2)?.kind, !isSymbol(":", at + 3) {
            guard from < 24, to <= 48 else { throw failure("\(from)-\(to) is not a range of hours") }
            at += 3
            return try finish(TimeSpan(start: .clock(from * 60), end: .clock(to * 60), openEnd: false))
        }
        let start = try timePoint(isEnd: false)
        if isSymbol("+"), !isTimeAhead(at + 1) || isSymbol(",", at + 1) {
            at += 1
            return TimeSpan(start: start, end: nil, openEnd: true)
        }
        guard isSymbol("-") else {
            throw failure("a time without an end: write a range (10:00-12:00) or an open end (10:00+)")
        }
        at += 1
        let end = try timePoint(isEnd: true)
        return try finish(TimeSpan(start: start, end: end, openEnd: false))
    }

    /// An open end after a range's end (`10:00-02:00+`), and the checks of its ends.
    private mutating func finish(_ span: TimeSpan) throws(OpeningHoursError) -> TimeSpan {
        var span = span
        if isSymbol("+") {
            at += 1
            span.openEnd = true
        }
        if isSymbol("/") { throw failure("points in time with a period (10:00-16:00/01:00) are not opening hours") }
        if case .clock(let start) = span.start, case .clock(let end)? = span.end, end > 48 * 60 || start >= 24 * 60 {
            throw failure("a range must start before 24:00 and end by 48:00")
        }
        return span
    }

    private mutating func timePoint(isEnd: Bool) throws(OpeningHoursError) -> TimePoint {
        switch peek()?.kind {
        case .number(let hours, _)?:
            if case .word(.meridiem(let pm))? = peek(at + 1)?.kind {
                at += 2
                return try twelveHour(hours, 0, pm: pm)
            }
            guard isSymbol(":", at + 1), case .number(let minutes, _)? = peek(at + 2)?.kind else {
                throw failure("expected a time as HH:MM")
            }
            guard minutes < 60, hours <= (isEnd ? 48 : 24) else { throw failure("\(hours):\(minutes) is not a time") }
            at += 3
            if case .word(.meridiem(let pm))? = peek()?.kind {
                at += 1
                return try twelveHour(hours, minutes, pm: pm)
            }
            return .clock(hours * 60 + minutes)
        case .word(.sun(let event))?:
            at += 1
            return .sun(event, offset: 0)
        case .symbol("(")?:
            guard case .word(.sun(let event))? = peek(at + 1)?.kind, isSymbol("+", at + 2) || isSymbol("-", at + 2),
                  case .number(let hours, _)? = peek(at + 3)?.kind, isSymbol(":", at + 4),
                  case .number(let minutes, _)? = peek(at + 5)?.kind, isSymbol(")", at + 6), minutes < 60, hours < 24 else {
                throw failure("expected an event of the sun with an offset, as (sunset-01:00)")
            }
            let sign = isSymbol("-", at + 2) ? -1 : 1
            at += 7
            return .sun(event, offset: sign * (hours * 60 + minutes))
        default:
            throw failure("expected a time")
        }
    }

    /// `1pm` → 13:00, `12am` → 00:00.
    private func twelveHour(_ hours: Int, _ minutes: Int, pm: Bool) throws(OpeningHoursError) -> TimePoint {
        guard (1...12).contains(hours), minutes < 60 else { throw failure("\(hours) is not an hour of a 12-hour clock") }
        return .clock((hours % 12 + (pm ? 12 : 0)) * 60 + minutes)
    }

    // MARK: Looking ahead

    private func peek(_ index: Int? = nil) -> Token? {
        let index = index ?? at
        return index < tokens.count ? tokens[index] : nil
    }

    private func isSymbol(_ symbol: Unicode.Scalar, _ index: Int? = nil) -> Bool {
        peek(index)?.kind == .symbol(symbol)
    }

    private func isNumber(_ value: Int, _ index: Int) -> Bool {
        if case .number(value, _)? = peek(index)?.kind { return true }
        return false
    }

    private func isYear(_ index: Int) -> Bool {
        if case .number(let value, 4)? = peek(index)?.kind, value >= 1900, !isSymbol(":", index + 1) { return true }
        return false
    }

    private func isMonthOrEaster(_ index: Int) -> Bool {
        switch peek(index)?.kind {
        case .word(.month)?, .word(.easter)?: true
        default: false
        }
    }

    /// A day of the month after a month: a number from 1 to 31 not starting a time
    /// (a colon with a space after it, `Jan 02: 18:00`, is the readability separator).
    private func isDay(_ index: Int) -> Bool {
        guard case .number(let value, let digits)? = peek(index)?.kind, digits <= 2, (1...31).contains(value) else { return false }
        if case .word(.meridiem)? = peek(index + 1)?.kind { return false }
        return !isSymbol(":", index + 1) || tokens[index + 1].spaceAfter
    }

    /// `Su[-1]` after a month: a date, the month's last Sunday.
    private func isNthWeekday(_ index: Int) -> Bool {
        guard case .word(.weekday)? = peek(index)?.kind else { return false }
        return isSymbol("[", index + 1)
    }

    private func isMeridiem(_ index: Int) -> Bool {
        if case .word(.meridiem)? = peek(index)?.kind { return true }
        return false
    }

    private func isNumberAt(_ index: Int) -> Bool {
        if case .number = peek(index)?.kind { return true }
        return false
    }

    /// After `Jan-`: another month (not a date `Jan 05`), optionally with a year.
    private func isMonthRangeEnd(_ index: Int) -> Bool {
        let index = isYear(index) ? index + 1 : index
        guard case .word(.month)? = peek(index)?.kind else { return false }
        return !isDay(index + 1) && !isNthWeekday(index + 1)
    }

    private func isTimeAhead(_ index: Int) -> Bool {
        switch peek(index)?.kind {
        case .number?: isSymbol(":", index + 1) || (isSymbol("-", index + 1) && isNumberAt(index + 2)) || isMeridiem(index + 1)
        case .word(.sun)?: true
        case .symbol("(")?: true
        default: false
        }
    }

    private func isDayOffsetAhead(_ index: Int) -> Bool {
        guard isSymbol("+", index) || isSymbol("-", index), case .number? = peek(index + 1)?.kind,
              case .word(.day)? = peek(index + 2)?.kind else { return false }
        return true
    }

    /// Consumes a `,` when the token after it continues the current list.
    private mutating func consumeComma(if continues: (Parser, Int) -> Bool) -> Bool {
        guard isSymbol(","), continues(self, at + 1) else { return false }
        at += 1
        return true
    }

    private func describe(_ token: Token) -> String {
        "\(Self.spelling(token.kind)) at position \(token.position + 1)"
    }

    private static func spelling(_ kind: Token.Kind) -> String {
        switch kind {
        case .number(let value, _): "\"\(value)\""
        case .comment(let text): "the comment \"\(text)\""
        case .symbol("|"): "\"||\""
        case .symbol(let symbol): "\"\(symbol)\""
        case .word(let word): "the word \(word)"
        }
    }

    private func failure(_ message: String) -> OpeningHoursError {
        let position = peek().map { " (at position \($0.position + 1))" } ?? " (at the end)"
        return OpeningHoursError(message: message + (message.contains("position") ? "" : position))
    }
}
