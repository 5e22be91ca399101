/// Checks of field values that the protocol states, each failing with
/// `invalid_argument`, the field's path and a message saying what is allowed.
///
/// String lengths count Unicode scalars, as the protocol does.
public enum Check {
    public static func length(_ value: String, field: String, in range: ClosedRange<Int>) throws {
        let count = value.unicodeScalars.count
        guard range.contains(count) else {
            let allowed = range.lowerBound == range.upperBound ? "\(range.lowerBound)" : "\(range.lowerBound)–\(range.upperBound)"
            throw ServiceError.invalidArgument(field: field, "\(field) must be \(allowed) characters (it has \(count))")
        }
    }

    public static func range<T: Comparable & Sendable>(_ value: T, field: String, in range: ClosedRange<T>) throws {
        guard range.contains(value) else {
            throw ServiceError.invalidArgument(field: field, "\(field) must be within \(describe(range.lowerBound))…\(describe(range.upperBound))")
        }
    }

    /// Whole doubles read as integers in messages: "-90…90", not "-90.0…90.0".
    private static func describe<T>(_ value: T) -> String {
        if let double = value as? Double, double.rounded() == double, abs(double) < 1e15 {
            return String(Int64(double))
        }
        return "\(value)"
    }

    public static func latitude(_ value: Double, field: String = "lat") throws {
        try range(value, field: field, in: -90...90)
    }

    public static func longitude(_ value: Double, field: String = "lon") throws {
        try range(value, field: field, in: -180...180)
    }

    public static func entityID(_ value: String, field: String) throws {
        guard Identifier.isValidEntityID(value) else {
            throw ServiceError.invalidArgument(field: field, "\(field) must be an id: 1–40 characters of A–Z, a–z, 0–9, '_' and '-'")
        }
    }

    public static func entityIDs(_ values: [String], field: String, max: Int) throws {
        guard values.count <= max else {
            throw ServiceError.invalidArgument(field: field, "\(field) may hold at most \(max) ids (it has \(values.count))")
        }
        for (index, value) in values.enumerated() {
            try entityID(value, field: "\(field)[\(index)]")
        }
    }

    /// A page size: absent means `defaultValue`.
    /// Runs a check of a member's own body, naming the fields it finds at fault from
    /// the top (`search.radius`, not `radius`).
    public static func member<Value>(_ name: String, _ check: () throws -> Value) throws -> Value {
        do {
            return try check()
        } catch var error as ServiceError {
            error.field = error.field.map { "\(name).\($0)" }
            throw error
        }
    }

    public static func limit(_ value: Int?, field: String = "limit", max: Int = 100, default defaultValue: Int = 20) throws -> Int {
        guard let value else { return defaultValue }
        try range(value, field: field, in: 1...max)
        return value
    }

    /// Every character is one of `allowed` (given as ASCII bytes).
    public static func characters(_ value: String, field: String, allowed: (UInt8) -> Bool, description: String) throws {
        guard value.utf8.allSatisfy(allowed) else {
            throw ServiceError.invalidArgument(field: field, "\(field) may only hold \(description)")
        }
    }

    /// No control characters (Unicode's category Cc, which is exactly U+0000–U+001F
    /// and U+007F–U+009F: the comparison avoids a property-table lookup per
    /// character, which was 4% of an import's time).
    public static func noControlCharacters(_ value: String, field: String, message: String) throws {
        guard !value.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else {
            throw ServiceError.invalidArgument(field: field, message)
        }
    }
}
