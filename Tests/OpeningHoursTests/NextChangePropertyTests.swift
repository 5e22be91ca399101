import Foundation
@testable import OpeningHours
import Testing

/// `nextChange` against the slow truth: walking minute by minute from the instant
/// until the state (open, closed, unknown, open end) differs.
@Suite("Opening hours: next change")
struct NextChangePropertyTests {
    /// A fixed-seed generator, so a failure can be replayed.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test("nextChange is the first minute a minute-by-minute walk sees the state change, for the reference's values")
    func againstMinuteWalk() throws {
        var generator = SplitMix(state: 40)
        let zone = Replay.berlin
        let values = Array(Set(ReferenceSuite.shared.cases.filter { $0.mode.value == 0 && $0.ignored == nil }.map(\.value))).sorted()
        let place = OpeningHoursPlace(latitude: 49.54, longitude: 9.82, country: "DE", subdivision: "BW")
        var checked = 0
        for value in values {
            guard let hours = try? OpeningHours(parsing: value) else { continue }
            // An instant in 2024-2026, on a minute, in Berlin.
            let instant = Int64.random(in: 1_704_067_200...1_798_675_200, using: &generator) / 60 * 60
            let context = EvaluationContext(place: place, timeZone: zone)
            func kind(_ at: Int64) -> Segment {
                let wall = at + Int64(zone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(at))))
                return hours.segment(wall: wall, context: context)
            }
            let now = kind(instant)
            let next = hours.state(at: Date(timeIntervalSince1970: Double(instant)), in: zone, place: place).nextChange
            var walked: Int64?
            var minute = instant + 60
            while minute <= instant + 2 * 86_400 {
                if !kind(minute).sameState(as: now) { walked = minute; break }
                minute += 60
            }
            if let walked {
                #expect(next.map { Int64($0.timeIntervalSince1970) } == walked, "\(value) from \(instant)")
            } else if let next {
                #expect(next.timeIntervalSince1970 > Double(instant + 2 * 86_400), "\(value) from \(instant)")
            }
            checked += 1
        }
        #expect(checked > 400)
    }
}
