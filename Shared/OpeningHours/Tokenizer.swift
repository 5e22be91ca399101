/// Splits an `opening_hours` value into tokens, reading the forms the reference
/// accepts with a warning as their standard spelling (`Mon` → `Mo`, `–` → `-`,
/// `10.00` → `10:00`, `to` → `-`), so the parser sees one grammar.
struct Token: Sendable, Equatable {
    enum Kind: Sendable, Equatable {
        /// Digits, with how many were written (`08` has two).
        case number(Int, digits: Int)
        /// A known word, in its standard spelling (see `Tokenizer.words`).
        case word(Word)
        /// Text in double quotes.
        case comment(String)
        /// One of `- : , ; + / [ ] ( )`, or `|` for `||`.
        case symbol(Unicode.Scalar)
    }

    var kind: Kind
    /// Where the token starts, in characters from the value's start (for messages).
    var position: Int
    /// Whitespace follows it (`Jan 02: 18:00` has a readability colon, `02:18` a time).
    var spaceAfter = false
}

/// The words of the grammar.
enum Word: Sendable, Equatable {
    case weekday(Int)
    case month(Int)
    case holiday(HolidayKind)
    case sun(SunEvent)
    case state(RuleState)
    case week, easter, day
    /// `am`, `pm` after a time: a 12-hour clock, read with a warning.
    case meridiem(pm: Bool)
}

enum Tokenizer {
    /// Standard and tolerated spellings of the grammar's words, lower-cased.
    static let words: [String: Word] = {
        var words: [String: Word] = [:]
        let weekdays = [
            ["mo", "mon", "monday", "mondays"], ["tu", "tue", "tues", "tuesday", "tuesdays"],
            ["we", "wed", "wednesday", "wednesdays"], ["th", "thu", "thur", "thurs", "thursday", "thursdays"],
            ["fr", "fri", "friday", "fridays"], ["sa", "sat", "saturday", "saturdays"], ["su", "sun", "sunday", "sundays"],
        ]
        for (index, spellings) in weekdays.enumerated() { for spelling in spellings { words[spelling] = .weekday(index) } }
        let months = [
            ["jan", "january"], ["feb", "february"], ["mar", "march"], ["apr", "april"], ["may"], ["jun", "june"],
            ["jul", "july"], ["aug", "august"], ["sep", "sept", "september"], ["oct", "october"], ["nov", "november"],
            ["dec", "december"],
        ]
        for (index, spellings) in months.enumerated() { for spelling in spellings { words[spelling] = .month(index + 1) } }
        words["ph"] = .holiday(.public)
        words["sh"] = .holiday(.school)
        for event in SunEvent.allCases { words[event.rawValue] = .sun(event) }
        words["open"] = .state(.open)
        words["closed"] = .state(.closed)
        words["off"] = .state(.closed)
        words["unknown"] = .state(.unknown)
        words["week"] = .week
        words["easter"] = .easter
        words["day"] = .day
        words["days"] = .day
        return words
    }()

    /// Characters read as `-` in tolerant reading.
    static let dashes: Set<Unicode.Scalar> = ["‐", "‑", "‒", "−", "ー", "～", "→", "=", "_"]

    /// The tokens of `text`. `tolerant` reads the forms of `Corrections` (phrases must
    /// have been rewritten already), other digits (`⁰`, `₀`) and look-alike characters.
    /// Works on Unicode scalars: grapheme clusters cost more than a whole parse.
    static func tokens(_ value: String, tolerant: Bool = false) throws(OpeningHoursError) -> [Token] {
        let scalars = Array(value.unicodeScalars)
        var tokens: [Token] = []
        tokens.reserveCapacity(scalars.count / 2)
        var index = 0
        func digit(_ scalar: Unicode.Scalar) -> Int? {
            if scalar.value >= 0x30 && scalar.value <= 0x39 { return Int(scalar.value - 0x30) }
            guard tolerant, scalar.properties.numericType == .decimal || scalar.properties.numericType == .digit,
                  let value = scalar.properties.numericValue else { return nil }
            return Int(value)
        }
        func isLetter(_ scalar: Unicode.Scalar) -> Bool {
            let value = scalar.value
            if value < 0x80 { return (value >= 0x41 && value <= 0x5A) || (value >= 0x61 && value <= 0x7A) }
            return scalar.properties.isAlphabetic || scalar.properties.generalCategory == .nonspacingMark
                || scalar.properties.generalCategory == .spacingMark
        }
        func text(_ range: Range<Int>) -> String {
            var view = String.UnicodeScalarView()
            view.append(contentsOf: scalars[range])
            return String(view)
        }
        while index < scalars.count {
            let scalar = scalars[index]
            let start = index
            if scalar == " " || scalar == "\t" || scalar.properties.isWhitespace {
                if !tokens.isEmpty { tokens[tokens.count - 1].spaceAfter = true }
                index += 1
            } else if var value = digit(scalar) {
                index += 1
                while index < scalars.count, let next = digit(scalars[index]) {
                    // Long runs of digits are never a date or time: stop before they overflow.
                    guard index - start < 6 else { throw OpeningHoursError(message: "the number at position \(start + 1) is too long") }
                    value = value * 10 + next
                    index += 1
                }
                tokens.append(Token(kind: .number(value, digits: index - start), position: start))
                // `10.00` and `10h00` as times.
                if index + 1 < scalars.count, scalars[index] == "." || scalars[index] == "h",
                   scalars[index + 1].value >= 0x30, scalars[index + 1].value <= 0x39 {
                    tokens.append(Token(kind: .symbol(":"), position: index))
                    index += 1
                } else if tolerant, index < scalars.count, scalars[index] == "." {
                    // `Dec 24.`: a German ordinal's dot.
                    index += 1
                }
            } else if tolerant, dashes.contains(scalar) {
                tokens.append(Token(kind: .symbol("-"), position: start))
                index += 1
            } else if isLetter(scalar) {
                while index < scalars.count, isLetter(scalars[index]) { index += 1 }
                let word = text(start..<index).lowercased()
                // `Mon.` and `Jan.`: the dot of an abbreviation.
                if index < scalars.count, scalars[index] == ".", words[word] != nil || tolerant { index += 1 }
                if word == "to" || word == "till" || word == "until" {
                    tokens.append(Token(kind: .symbol("-"), position: start))
                } else if word == "and" {
                    tokens.append(Token(kind: .symbol(","), position: start))
                } else if let known = words[word] {
                    tokens.append(Token(kind: .word(known), position: start))
                } else if tolerant, word == "am" || word == "pm" {
                    tokens.append(Token(kind: .word(.meridiem(pm: word == "pm")), position: start))
                } else if tolerant, let replacement = Corrections.replacement(for: word) {
                    for var token in try Self.tokens(replacement) {
                        token.position = start
                        tokens.append(token)
                    }
                } else {
                    throw OpeningHoursError(message: "\"\(word)\" at position \(start + 1) is not part of the opening_hours syntax")
                }
            } else if scalar == "\"" || scalar == "“" || scalar == "„" {
                index += 1
                while index < scalars.count, scalars[index] != "\"", scalars[index] != "”", scalars[index] != "“" {
                    index += 1
                }
                guard index < scalars.count else {
                    throw OpeningHoursError(message: "the comment starting at position \(start + 1) has no closing quote")
                }
                tokens.append(Token(kind: .comment(text((start + 1)..<index)), position: start))
                index += 1
            } else if scalar == "|" {
                guard index + 1 < scalars.count, scalars[index + 1] == "|" else {
                    throw OpeningHoursError(message: "a single \"|\" at position \(start + 1): rules fall back with \"||\"")
                }
                tokens.append(Token(kind: .symbol("|"), position: start))
                index += 2
            } else if Self.symbols.contains(scalar) {
                tokens.append(Token(kind: .symbol(scalar), position: start))
                index += 1
            } else if scalar == "–" || scalar == "—" || scalar == "~" {
                tokens.append(Token(kind: .symbol("-"), position: start))
                index += 1
            } else if tolerant, scalar == "&" {
                tokens.append(Token(kind: .symbol(","), position: start))
                index += 1
            } else if scalar == "：" {
                tokens.append(Token(kind: .symbol(":"), position: start))
                index += 1
            } else {
                throw OpeningHoursError(message: "\"\(scalar)\" at position \(start + 1) is not part of the opening_hours syntax")
            }
        }
        return tokens
    }

    private static let symbols: Set<Unicode.Scalar> = ["-", ":", ",", ";", "+", "/", "[", "]", "(", ")"]
}
