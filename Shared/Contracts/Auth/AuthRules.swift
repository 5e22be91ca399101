import Foundation
import Wire

/// The rules of auth's fields, shared by requests and by clients that check early.
public enum AuthRules {
    public static let password = 8...128
    public static let username = 3...32
    public static let name = 1...100
    public static let phone = 3...32
    public static let email = 3...254

    public static func email(_ value: String, field: String = "email") throws {
        try Check.length(value, field: field, in: Self.email)
        let parts = value.split(separator: "@", omittingEmptySubsequences: false)
        let valid = parts.count == 2
            && (1...64).contains(parts[0].unicodeScalars.count)
            && parts[1].contains(".")
            && !parts[1].hasPrefix(".") && !parts[1].hasSuffix(".") && !parts[1].contains("..")
            && value.unicodeScalars.allSatisfy { $0.value > 0x20 && $0.value != 0x7F }
        guard valid else {
            throw ServiceError.invalidArgument(field: field, "\(field) must be an email address such as name@example.org")
        }
    }

    /// A mail link's token: base64url, as `Identifier.random` makes them.
    public static func mailToken(_ value: String, field: String = "token") throws {
        try Check.length(value, field: field, in: 16...128)
        try Check.characters(value, field: field, allowed: Identifier.isIDByte, description: "A–Z, a–z, 0–9, '-' and '_'")
    }

    /// A language tag (BCP 47: `de`, `de-CH`, `en-GB`; `LanguageTag`).
    public static func language(_ value: String, field: String = "lang") throws {
        guard LanguageTag(value) != nil else {
            throw ServiceError.invalidArgument(field: field, "\(field) must be a language tag such as de or en-GB")
        }
    }

    public static func username(_ value: String, field: String = "username") throws {
        try Check.length(value, field: field, in: Self.username)
        try Check.characters(value, field: field, allowed: isUsernameByte, description: "a–z, 0–9, '_' and '.'")
    }

    public static func password(_ value: String, field: String = "password") throws {
        try Check.length(value, field: field, in: Self.password)
    }

    public static func name(_ value: String, field: String) throws {
        try Check.length(value, field: field, in: Self.name)
        try Check.noControlCharacters(value, field: field, message: "\(field) may not hold control characters")
    }

    public static func phone(_ value: String, field: String = "phone") throws {
        try Check.length(value, field: field, in: Self.phone)
        try Check.characters(value, field: field, allowed: isPhoneByte, description: "digits, spaces and + - ( ) .")
    }

    private static func isUsernameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."): true
        default: false
        }
    }

    private static func isPhoneByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: " "), UInt8(ascii: "+"), UInt8(ascii: "-"),
             UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "."): true
        default: false
        }
    }
}
