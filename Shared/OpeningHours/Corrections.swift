import Foundation

/// The forms the reference accepts with a warning — words of other languages,
/// phrases, look-alike characters — and what they stand for in the specification's
/// own spelling. Read only when a value does not parse as written, so standard values
/// pay nothing for them. (The list follows the kinds of correction opening_hours.js
/// makes; the names of days and months in other languages come from CLDR.)
enum Corrections {
    /// Phrases, lower-cased, longest first where one holds another.
    static let phrases: [(String, String)] = [
        ("opening_hours =", ""), ("opening_hours=", ""), ("opening_hours\t", ""),
        ("24 hours 7 days a week", "24/7"), ("7 days a week", "Mo-Su"), ("7 days/week", "Mo-Su"), ("7j/7", "Mo-Su"),
        ("7/7", "Mo-Su"), ("24x7", "24/7"), ("24 hours", "00:00-24:00"),
        ("always open", "24/7"), ("always closed", "closed"), ("all days", "Mo-Su"), ("all day", "24/7"), ("every day", "Mo-Su"),
        ("one day after public holidays", "PH +1 day"), ("one day after public holiday", "PH +1 day"),
        ("one day before public holidays", "PH -1 day"), ("one day before public holiday", "PH -1 day"),
        ("day after public holidays", "PH +1 day"), ("day after public holiday", "PH +1 day"),
        ("day before public holidays", "PH -1 day"), ("day before public holiday", "PH -1 day"),
        ("public holidays", "PH"), ("public holiday", "PH"), ("school holidays", "SH"), ("school holiday", "SH"),
        ("on work days", "Mo-Fr"), ("on work day", "Mo-Fr"),
        ("on appointments", "\"on appointment\""), ("on appointment", "\"on appointment\""), ("on_appointment", "\"on appointment\""),
        ("by appointments", "\"by appointment\""), ("by appointment", "\"by appointment\""), ("by_appointment", "\"by appointment\""),
        ("nach vereinbarung", "\"Nach Vereinbarung\""), ("nach_vereinbarung", "\"Nach Vereinbarung\""),
        ("nach absprache", "\"Nach Absprache\""), ("sur rendez-vous", "\"Sur rendez-vous\""), ("sur rendez vous", "\"Sur rendez-vous\""),
        ("sur_rendez_vous", "\"Sur rendez-vous\""), ("sur rdv", "\"Sur rendez-vous\""),
        ("bis open end", "+"), ("till open end", "+"), ("til open end", "+"), ("- open end", "+"), ("-open end", "+"),
        ("open end", "+"), ("-openend", "+"), ("openend", "+"), ("till late", "+"), ("til late", "+"), ("- late", "+"),
        ("-late", "+"), ("jours fériés", "PH"), ("a.m.", "am"), ("p.m.", "pm"),
    ]

    /// Single words.
    static let words: [String: String] = {
        var words: [String: String] = [:]
        for word in ["to", "till", "til", "until", "through", "bis", "a", "as", "á", "ás", "às", "à", "ate", "до"] { words[word] = "-" }
        for word in ["and", "und", "u", "auch", "et"] { words[word] = "," }
        for word in ["geschlossen", "geschl", "gesloten", "fermé", "ruhetag", "ruhetage", "except"] { words[word] = "off" }
        for word in ["holiday", "holidays", "feiertag", "feiertage", "feiertags", "feiertagen", "feestdag", "feestdagen"] { words[word] = "PH" }
        for word in ["ferien", "schulferien", "schoolholiday", "schoolholidays"] { words[word] = "SH" }
        for word in ["weekday", "weekdays", "wd"] { words[word] = "Mo-Fr" }
        for word in ["werktag", "werktags"] { words[word] = "Mo-Sa" }
        for word in ["weekend", "weekends"] { words[word] = "Sa,Su" }
        for word in ["daily", "everyday", "täglich"] { words[word] = "Mo-Su" }
        for word in ["always", "nonstop", "anytime"] { words[word] = "24/7" }
        for word in ["h", "hours", "hrs", "hs", "uhr", "geöffnet", "zwischen", "ist", "durchgehend", "öffnungszeit",
                     "öffnungszeiten", "season", "from", "ab", "von"] { words[word] = "" }
        for word in ["late"] { words[word] = "+" }
        words["sundown"] = "sunset"
        words["daytime"] = "sunrise-sunset"
        words["daylight"] = "sunrise-sunset"
        words["midday"] = "12:00"
        words["noon"] = "12:00"
        words["midnight"] = "00:00"
        words["ostern"] = "easter"
        words["sonnenaufgang"] = "sunrise"
        words["sonnenuntergang"] = "sunset"
        words["morgendämmerung"] = "dawn"
        words["abenddämmerung"] = "dusk"
        return words
    }()

    /// Names of days and months in CLDR's languages (`DayNameTable`).
    static let dayNames: [String: String] = {
        var names: [String: String] = [:]
        for line in DayNameTable.text.split(separator: "\n") {
            let fields = line.split(separator: "\t")
            if fields.count == 2 { names[String(fields[0])] = String(fields[1]) }
        }
        return names
    }()

    /// What an unknown word stands for, when it is a known form: a German plural
    /// (`montags`) is read as its singular.
    static func replacement(for word: String) -> String? {
        if let replacement = words[word] ?? dayNames[word] { return replacement }
        if word.hasSuffix("s"), let singular = dayNames[String(word.dropLast())] { return singular }
        return nil
    }

    /// The text with phrases replaced, outside comments.
    static func rewritingPhrases(_ text: String) -> String {
        var result = ""
        var inComment = false
        var chunk = ""
        func flush() {
            var lowered = chunk.lowercased()
            for (phrase, replacement) in phrases where lowered.contains(phrase) {
                lowered = lowered.replacingOccurrences(of: phrase, with: " " + replacement + " ")
            }
            // Words are read case-insensitively: lower case loses nothing outside comments.
            result += lowered
            chunk = ""
        }
        for character in text {
            if character == "\"" {
                if inComment { result += chunk + "\""; chunk = "" } else { flush(); result += "\"" }
                inComment.toggle()
            } else {
                chunk.append(character)
            }
        }
        if inComment { result += chunk } else { flush() }
        return result
    }
}
