import Contracts
import Foundation

/// A point as the user types it: `52.09,5.12` or a place name.
public enum PointArgument: Equatable, Sendable {
    case coordinates(lat: Double, lon: Double)
    case place(String)

    public init(_ text: String) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        if parts.count == 2, let lat = Double(parts[0]), let lon = Double(parts[1]) {
            self = .coordinates(lat: lat, lon: lon)
        } else {
            self = .place(text)
        }
    }
}

/// A distance as the user types it: `5km`, `500m`, `2.5 km` or plain metres.
public enum DistanceArgument {
    public static func metres(_ text: String) throws -> Double {
        let trimmed = text.lowercased().replacingOccurrences(of: " ", with: "")
        let (number, factor): (Substring, Double) =
            trimmed.hasSuffix("km") ? (trimmed.dropLast(2), 1_000) : trimmed.hasSuffix("m") ? (trimmed.dropLast(1), 1) : (Substring(trimmed), 1)
        guard let value = Double(number), value.isFinite, value > 0 else {
            throw GatewayError("\"\(text)\" is not a distance: write 500m, 5km or a number of metres")
        }
        return value * factor
    }
}

/// The language `here` asks names in: `--lang`, else the locale's, as POSIX orders
/// them (`LC_ALL`, then `LC_MESSAGES`, then `LANG`; the first set wins). Nil for
/// the `C` and `POSIX` locales, and when none is set: places then keep their own
/// names and countries are English.
public enum LanguageArgument {
    public static func tag(flag: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        // A `--lang` that is no tag goes to geo as it is, which refuses it naming `lang`.
        if let flag { return flag }
        for name in ["LC_ALL", "LC_MESSAGES", "LANG"] {
            guard let value = environment[name], !value.isEmpty else { continue }
            return LanguageTag(posixLocale: value)?.normalized
        }
        return nil
    }
}
