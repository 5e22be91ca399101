import Foundation

/// IANA time zone names, as venues give them (`Europe/Amsterdam`).
public enum TimeZoneNames {
    /// Foundation also reads abbreviations and offsets (`CET`, `GMT+1`) as zones;
    /// the protocol takes the system's IANA names only (and `UTC`).
    private static let known: Set<String> = Set(TimeZone.knownTimeZoneIdentifiers).union(["UTC", "Etc/UTC"])

    /// The zone, when `name` is an IANA name this system knows.
    public static func timeZone(named name: String) -> TimeZone? {
        guard known.contains(name) else { return nil }
        return TimeZone(identifier: name)
    }
}
