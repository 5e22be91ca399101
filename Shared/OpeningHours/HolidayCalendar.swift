/// Which days are public (`PH`) or school (`SH`) holidays, by country and subdivision:
/// `HolidayTable`, derived from PyPI's `holidays` by `Holidays/derive_holidays.py`.
/// Read once, on first use.
public enum HolidayCalendar {
    /// The countries (ISO 3166-1 alpha-2, upper case) whose holidays are known.
    public static let countries: Set<String> = Set(table.keys.compactMap { $0.region.split(separator: "-").first.map(String.init) })

    /// Whether `day` (days since 1970) is a holiday of `kind` at the place; nil when the
    /// holidays of its country are not known (or the year is outside the table's).
    static func isHoliday(_ kind: HolidayKind, day: Int, country: String, subdivision: String?) -> Bool? {
        let country = country.uppercased()
        if let subdivision, let days = table[Key(kind: kind, region: country + "-" + subdivision.uppercased())] {
            return days.contains(day)
        }
        guard let days = table[Key(kind: kind, region: country)] else { return nil }
        return days.contains(day)
    }

    private struct Key: Hashable {
        var kind: HolidayKind
        var region: String
    }

    private static let table: [Key: Set<Int>] = {
        var table: [Key: Set<Int>] = [:]
        for line in HolidayTable.text.split(separator: "\n") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count >= 3, let kind = HolidayKind(rawValue: String(fields[0])) else { continue }
            let region = String(fields[1])
            if let dash = region.firstIndex(of: "-") {
                var days = table[Key(kind: kind, region: String(region[..<dash]))] ?? []
                days.formUnion(runs(fields[2]))
                if fields.count > 3 { days.subtract(runs(fields[3])) }
                table[Key(kind: kind, region: region)] = days
            } else {
                table[Key(kind: kind, region: region)] = runs(fields[2])
            }
        }
        return table
    }()

    /// `20140101+3,20140418` → the days they cover.
    private static func runs(_ text: Substring) -> Set<Int> {
        var days: Set<Int> = []
        for run in text.split(separator: ",") {
            let parts = run.split(separator: "+")
            guard let date = parts.first.flatMap({ Int($0) }) else { continue }
            let first = CivilCalendar.days(year: date / 10_000, month: date / 100 % 100, day: date % 100)
            let extra = parts.count > 1 ? Int(parts[1]) ?? 0 : 0
            for day in first...(first + extra) { days.insert(day) }
        }
        return days
    }
}
