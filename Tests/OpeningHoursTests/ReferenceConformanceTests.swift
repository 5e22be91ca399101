import Foundation
@testable import OpeningHours
import Testing

/// The reference implementation's own test suite (opening_hours.js, test/test.js, read
/// by `Reference/extract_cases.js` into `reference-cases.json`), replayed: how many of
/// its values we accept, and whether we agree on every minute of its test ranges.
struct ReferenceCase: Decodable, Sendable {
    struct Interval: Decodable, Sendable, Equatable {
        var from: String
        var to: String
        var unknown: Bool
    }

    struct Place: Decodable, Sendable {
        var lat: Double?
        var lon: Double?
        var country: String?
        var state: String?
    }

    var name: String
    var value: String
    var ignored: String?
    var from: String
    var to: String
    var mode: Mode
    var place: Place?
    var intervals: [Interval]

    /// The reference's mode: 0 time ranges (opening hours), 1 points in time, 2 both.
    struct Mode: Decodable, Sendable {
        var value: Int
        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let number = try? container.decode(Int.self) {
                value = number
            } else {
                struct Options: Decodable { var mode: Int? }
                value = try container.decode(Options.self).mode ?? 0
            }
        }
    }
}

struct ReferenceSuite: Decodable, Sendable {
    struct Refused: Decodable, Sendable { var name: String; var value: String? }
    struct NextChange: Decodable, Sendable {
        var name: String
        var value: String
        var from: String
        var next: String?
        var place: ReferenceCase.Place?
    }

    var commit: String?
    var cases: [ReferenceCase]
    var refused: [Refused]
    var nextChanges: [NextChange]

    static let shared: ReferenceSuite = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Reference/reference-cases.json")
        // swiftlint:disable:next force_try
        return try! JSONDecoder().decode(ReferenceSuite.self, from: Data(contentsOf: url))
    }()
}

/// Where the suite's places are, as our holiday table names their regions.
enum ReferencePlaces {
    static let subdivisions: [String: String] = [
        "Baden-Württemberg": "BW", "Bremen": "HB", "Rheinland-Pfalz": "RP", "Wien": "9", "Scotland": "SCT",
        "Alabama": "AL", "Alaska": "AK", "Arizona": "AZ", "Arkansas": "AR", "California": "CA", "Colorado": "CO",
        "Connecticut": "CT", "Delaware": "DE", "District of Columbia": "DC", "Florida": "FL", "Georgia": "GA", "Guam": "GU",
        "Hawaii": "HI", "Idaho": "ID", "Illinois": "IL", "Indiana": "IN", "Iowa": "IA", "Kansas": "KS", "Kentucky": "KY",
        "Louisiana": "LA", "Maine": "ME", "Maryland": "MD", "Massachusetts": "MA", "Michigan": "MI", "Minnesota": "MN",
        "Mississippi": "MS", "Missouri": "MO", "Montana": "MT", "Nebraska": "NE", "Nevada": "NV", "New Hampshire": "NH",
        "New Jersey": "NJ", "New Mexico": "NM", "New York": "NY", "North Carolina": "NC", "Ohio": "OH", "Oklahoma": "OK",
        "Oregon": "OR", "Pennsylvania": "PA", "Puerto Rico": "PR", "Rhode Island": "RI", "South Carolina": "SC",
        "South Dakota": "SD", "Tennessee": "TN", "Texas": "TX", "United States Virgin Islands": "VI", "Utah": "UT",
        "Vermont": "VT", "Virginia": "VA", "Washington": "WA", "West Virginia": "WV", "Wisconsin": "WI", "Wyoming": "WY",
    ]

    static func place(_ place: ReferenceCase.Place?) -> OpeningHoursPlace {
        guard let place else { return .unknown }
        return OpeningHoursPlace(latitude: place.lat, longitude: place.lon, country: place.country?.uppercased(),
                                 subdivision: place.state.flatMap { subdivisions[$0] })
    }
}

/// Open and unknown stretches between two local times, as the reference lists them.
enum Replay {
    static let berlin = TimeZone(identifier: "Europe/Berlin")!

    /// `2012-10-01 10:00` → local minutes since 1970.
    static func minutes(_ text: String) -> Int {
        let digits = text.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
        return CivilCalendar.days(year: digits[0], month: digits[1], day: digits[2]) * 1440 + digits[3] * 60 + digits[4]
    }

    static func text(_ minutes: Int) -> String {
        let date = CivilCalendar.date(minutes.floorDiv(1440))
        let minute = minutes - minutes.floorDiv(1440) * 1440
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(date.year)-\(two(date.month))-\(two(date.day)) \(two(minute / 60)):\(two(minute % 60))"
    }

    static func intervals(_ hours: OpeningHours, from: String, to: String, place: OpeningHoursPlace) -> [ReferenceCase.Interval] {
        let start = minutes(from), end = minutes(to)
        let context = EvaluationContext(place: place, timeZone: berlin)
        var result: [(Int, Int, Bool)] = []
        for day in start.floorDiv(1440)...(end - 1).floorDiv(1440) {
            for segment in hours.timeline(day: Int64(day), context: context).segments where segment.state != .closed {
                let from = max(start, day * 1440 + segment.start), to = min(end, day * 1440 + segment.end)
                guard from < to else { continue }
                let unknown = segment.state == .unknown
                if let last = result.last, last.1 == from, last.2 == unknown {
                    result[result.count - 1].1 = to
                } else {
                    result.append((from, to, unknown))
                }
            }
        }
        return result.map { ReferenceCase.Interval(from: text($0.0), to: text($0.1), unknown: $0.2) }
    }

    /// The reference's intervals with neighbours of one state joined (it splits them where comments change).
    static func joined(_ intervals: [ReferenceCase.Interval]) -> [ReferenceCase.Interval] {
        var result: [ReferenceCase.Interval] = []
        for interval in intervals {
            if let last = result.last, last.to == interval.from, last.unknown == interval.unknown {
                result[result.count - 1].to = interval.to
            } else if interval.from != interval.to {
                result.append(interval)
            }
        }
        return result
    }
}

extension Int {
    fileprivate func floorDiv(_ divisor: Int) -> Int {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}

/// Why we may read a value's instants differently from the reference: each a
/// documented choice (Docs/OPENING_HOURS.md), anything else is a failure.
enum KnownDifference: String, CaseIterable {
    /// PH/SH where the place's country is not in our holiday table (or no place is given).
    case holidaysOfOtherCountries = "holidays of a country outside the table"
    /// PH/SH of a country we know: our days come from PyPI's holidays, the reference's from its own lists.
    case holidayData = "holiday lists differ"
    /// Sun events: SunCalc asked at other instants gives times a few minutes apart.
    case sunMinutes = "sun events a few minutes apart"
    /// Two values the reference reads in ways its own similar cases contradict.
    case referenceQuirk = "a reference quirk"

    static let quirks: Set<String> = ["Mo 22:00-04:00+", "easter-Apr 02: open \"Around easter\""]

    /// Whether the two read every minute alike but within `within` minutes of a boundary of either.
    static func agreeNearBoundaries(_ ours: [ReferenceCase.Interval], _ theirs: [ReferenceCase.Interval], within: Int) -> Bool {
        func state(_ list: [ReferenceCase.Interval], _ minute: Int) -> Int {
            for interval in list where Replay.minutes(interval.from) <= minute && minute < Replay.minutes(interval.to) {
                return interval.unknown ? 2 : 1
            }
            return 0
        }
        let boundaries = (ours + theirs).flatMap { [Replay.minutes($0.from), Replay.minutes($0.to)] }.sorted()
        guard let first = boundaries.first, let last = boundaries.last else { return true }
        for minute in first..<last where state(ours, minute) != state(theirs, minute) {
            guard boundaries.contains(where: { abs($0 - minute) <= within }) else { return false }
        }
        return true
    }

    static func of(_ example: ReferenceCase, ours: [ReferenceCase.Interval], theirs: [ReferenceCase.Interval]) -> KnownDifference? {
        let words = example.value.lowercased()
        if words.contains("ph") || words.contains("sh") || words.contains("holiday") {
            let country = example.place?.country?.uppercased()
            return country.map { HolidayCalendar.countries.contains($0) } == true ? .holidayData : .holidaysOfOtherCountries
        }
        if ["sun", "dawn", "dusk", "daylight"].contains(where: words.contains), agreeNearBoundaries(ours, theirs, within: 5) {
            return .sunMinutes
        }
        return quirks.contains(example.value) ? .referenceQuirk : nil
    }
}

@Suite("Opening hours against the reference's test suite")
struct ReferenceConformanceTests {
    @Test("95 % of the reference's values are accepted; on the rest we agree at every minute, but for documented choices")
    func conformance() throws {
        let suite = ReferenceSuite.shared
        var values = Set<String>(), accepted = Set<String>(), refusedValues: [String: String] = [:]
        var agreeing = 0, compared = 0
        var disagreements: [String] = []
        var differences: [KnownDifference: Int] = [:]
        for example in suite.cases where example.ignored == nil && example.mode.value == 0 {
            values.insert(example.value)
            let hours: OpeningHours
            do {
                hours = try OpeningHours(parsing: example.value)
            } catch {
                refusedValues[example.value] = error.message
                continue
            }
            accepted.insert(example.value)
            compared += 1
            let ours = Replay.intervals(hours, from: example.from, to: example.to, place: ReferencePlaces.place(example.place))
            let theirs = Replay.joined(example.intervals)
            if ours == theirs {
                agreeing += 1
            } else if let known = KnownDifference.of(example, ours: ours, theirs: theirs) {
                differences[known, default: 0] += 1
            } else {
                let first = zip(ours, theirs).first { $0 != $1 }
                disagreements.append("\(example.value) [\(example.place?.country ?? "-")] \(example.from): ours \(first?.0 ?? ours.last ?? .init(from: "", to: "", unknown: false)) theirs \(first?.1 ?? theirs.last ?? .init(from: "", to: "", unknown: false)) (\(ours.count) vs \(theirs.count))")
            }
        }
        print("REFERENCE values \(values.count) accepted \(accepted.count); cases compared \(compared) agreeing \(agreeing); "
              + KnownDifference.allCases.map { "\($0.rawValue) \(differences[$0] ?? 0)" }.joined(separator: ", "))
        for (value, message) in refusedValues.sorted(by: { $0.key < $1.key }) { print("REFUSED \(value) :: \(message)") }
        for line in disagreements { print("DIFFER \(line)") }
        #expect(Double(accepted.count) >= 0.95 * Double(values.count), "accepted \(accepted.count) of \(values.count)")
        #expect(disagreements.isEmpty, "\(disagreements.count) cases read differently without a documented reason")
    }

    @Test("values the reference refuses, we refuse too (but for tolerant forms we read)")
    func refusals() {
        let suite = ReferenceSuite.shared
        let values = suite.refused.compactMap(\.value)
        let accepted = values.filter { (try? OpeningHours(parsing: $0)) != nil }
        print("REFERENCE refuses \(values.count); we accept \(accepted.count) of them: \(accepted)")
        #expect(Double(accepted.count) <= 0.2 * Double(values.count))
    }

    @Test("the reference's next-change cases")
    func nextChanges() throws {
        for example in ReferenceSuite.shared.nextChanges {
            let hours = try OpeningHours(parsing: example.value)
            let place = ReferencePlaces.place(example.place)
            guard place.country.map(HolidayCalendar.countries.contains) ?? true else { continue }
            let from = Replay.minutes(example.from)
            let instant = Date(timeIntervalSince1970: Double(OpeningHours.instant(ofWall: Int64(from) * 60, in: Replay.berlin)))
            let next = hours.state(at: instant, in: Replay.berlin, place: place).nextChange
            let expected = example.next.map { Date(timeIntervalSince1970: Double(OpeningHours.instant(ofWall: Int64(Replay.minutes($0)) * 60, in: Replay.berlin))) }
            #expect(next == expected, "\(example.name)")
        }
    }
}
