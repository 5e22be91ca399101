import Foundation
import Wire

/// The rules of catalogue's fields, shared by requests and by clients that check early.
public enum CatalogueRules {
    public static let title = 1...200
    public static let maxText = 10_000
    public static let maxTags = 20
    public static let tag = 1...40
    public static let category = 1...40
    public static let city = 1...100
    public static let ref = 1...100
    public static let notifyRadius = 10.0...5_000.0
    public static let maxHours = 500
    public static let maxImages = 10
    public static let maxPrice = 1e12

    /// `[a-z]{2,20}`.
    public static func kind(_ value: String, field: String) throws {
        guard (2...20).contains(value.utf8.count), value.utf8.allSatisfy({ $0 >= 0x61 && $0 <= 0x7A }) else {
            throw ServiceError.invalidArgument(field: field, "\(field) must be 2–20 lower-case letters a–z (offer, restaurant, sight, tip, event …)")
        }
    }

    /// 1–40 characters of `a–z 0–9 _ -`.
    public static func category(_ value: String, field: String) throws {
        try Check.length(value, field: field, in: category)
        try Check.characters(value, field: field, allowed: { ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5F || $0 == 0x2D },
                             description: "a–z, 0–9, '_' and '-'")
    }

    /// A line of text: no control characters.
    public static func line(_ value: String, field: String, length: ClosedRange<Int>) throws {
        try Check.length(value, field: field, in: length)
        try Check.noControlCharacters(value, field: field, message: "\(field) may not hold control characters such as line breaks")
    }

    public static func countryCode(_ value: String, field: String) throws -> String {
        let code = value.uppercased()
        guard ISOCodes.countries.contains(code) else {
            throw ServiceError.invalidArgument(field: field, "\(field) must be an ISO 3166-1 alpha-2 country code such as NL")
        }
        return code
    }

    public static func currency(_ value: String, field: String) throws -> String {
        let code = value.uppercased()
        guard ISOCodes.currencies.contains(code) else {
            throw ServiceError.invalidArgument(field: field, "\(field) must be an ISO 4217 currency code such as EUR")
        }
        return code
    }
}
