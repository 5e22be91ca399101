/// A stretch of one local day with one state, in minutes from its midnight.
struct Segment: Sendable, Equatable {
    var start: Int
    var end: Int
    var state: RuleState
    var comment: String?
    /// Unknown because the rule gives an open end (`18:00+`).
    var isOpenEnd = false

    func sameState(as other: Segment) -> Bool {
        state == other.state && isOpenEnd == other.isOpenEnd
    }
}

/// One local day's states from midnight to midnight: painted rule by rule, the way the
/// reference reads a value (later rules over earlier ones, `off` only over its own
/// times, `||` only over what is closed).
struct DayTimeline: Sendable, Equatable {
    static let minutesInDay = 1440

    private(set) var segments: [Segment] = [Segment(start: 0, end: minutesInDay, state: .closed)]

    func segment(at minute: Int) -> Segment {
        // Days have few segments: a scan beats a search.
        for segment in segments where minute < segment.end { return segment }
        return segments[segments.count - 1]
    }

    /// Sets `[start, end)` to a state; `overClosedOnly` leaves what is open or unknown.
    mutating func paint(_ start: Int, _ end: Int, state: RuleState, comment: String?, isOpenEnd: Bool, overClosedOnly: Bool) {
        let start = max(0, start), end = min(Self.minutesInDay, end)
        guard start < end else { return }
        var painted: [Segment] = []
        painted.reserveCapacity(segments.count + 2)
        for old in segments {
            if old.end <= start || old.start >= end || (overClosedOnly && old.state != .closed) {
                painted.append(old)
                continue
            }
            if old.start < start { painted.append(Segment(start: old.start, end: start, state: old.state, comment: old.comment, isOpenEnd: old.isOpenEnd)) }
            painted.append(Segment(start: max(old.start, start), end: min(old.end, end), state: state, comment: comment, isOpenEnd: isOpenEnd))
            if old.end > end { painted.append(Segment(start: end, end: old.end, state: old.state, comment: old.comment, isOpenEnd: old.isOpenEnd)) }
        }
        // Join neighbours that read the same.
        var joined: [Segment] = []
        joined.reserveCapacity(painted.count)
        for segment in painted {
            if var last = joined.last, last.sameState(as: segment), last.comment == segment.comment, last.end == segment.start {
                last.end = segment.end
                joined[joined.count - 1] = last
            } else {
                joined.append(segment)
            }
        }
        segments = joined
    }
}
