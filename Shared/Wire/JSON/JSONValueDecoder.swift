import Foundation

/// Decodes `Decodable` values from a parsed `JSONValue`.
///
/// Every failure is a `ServiceError` with code `invalid_argument` and the offending
/// field's path (`posts[3].hours`), so a handler's body type is its validation of
/// shapes and types. Unknown members are ignored, as the protocol requires.
public struct JSONValueDecoder: Sendable {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from value: JSONValue, codingPath: [any CodingKey] = []) throws -> T {
        try ValueDecoder(value: value, parentPath: codingPath, key: nil).decodeValue(T.self)
    }

    /// Decodes a value of `T` from JSON text (the strict parser's rules).
    public func decode<T: Decodable>(_ type: T.Type, from data: Data) throws -> T {
        let value: JSONValue
        do {
            value = try JSONParser.parse(data)
        } catch let error as JSONSyntaxError {
            throw ServiceError.badRequest("not valid JSON: \(error)")
        }
        return try decode(type, from: value)
    }
}

/// Builds the error for a value of the wrong JSON type.
func typeMismatch(_ path: [any CodingKey], expected: String, found: JSONValue) -> ServiceError {
    let field = FieldPath.string(path)
    if case .null = found {
        return .invalidArgument(field: field, "\(fieldName(field)) is required")
    }
    return .invalidArgument(field: field, "\(fieldName(field)) must be \(expected), not \(found.typeName)")
}

func fieldName(_ field: String) -> String { field.isEmpty ? "body" : field }

/// The error for a required member that is absent.
private func missing(_ field: String) -> ServiceError {
    .invalidArgument(field: field, "\(field) is required")
}

private struct ValueDecoder: Decoder {
    let value: JSONValue
    /// The path of the container holding the value, and the value's key in it: kept
    /// apart so that a member's path (an array) is only built when it is needed, for
    /// an error or a nested container, not for every member decoded.
    let parentPath: [any CodingKey]
    let key: (any CodingKey)?
    var codingPath: [any CodingKey] { key.map { parentPath + [$0] } ?? parentPath }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let object) = value else {
            throw typeMismatch(codingPath, expected: "an object", found: value)
        }
        return KeyedDecodingContainer(KeyedContainer<Key>(object: object, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else {
            throw typeMismatch(codingPath, expected: "an array", found: value)
        }
        return UnkeyedContainer(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { self }

    func decodeValue<T: Decodable>(_ type: T.Type) throws -> T {
        // Types with a fixed JSON form of their own, ahead of their Codable conformances.
        if T.self == JSONValue.self { return value as! T }
        if T.self == Date.self { return try decodeDate() as! T }
        do {
            return try T(from: self)
        } catch is DecodingError {
            // A conformance's own refusal (an enum's unknown raw value) is the
            // client's mistake, never an internal error.
            let field = FieldPath.string(codingPath)
            if let named = T.self as? any StringEnum.Type {
                throw ServiceError.invalidArgument(field: field, "\(fieldName(field)) must be one of \(named.allowedValues)")
            }
            throw ServiceError.invalidArgument(field: field, "\(fieldName(field)) has a value that is not allowed")
        }
    }

    private func decodeDate() throws -> Date {
        guard case .string(let text) = value else {
            throw typeMismatch(codingPath, expected: "an RFC 3339 time", found: value)
        }
        guard let date = Timestamp.parse(text) else {
            let field = FieldPath.string(codingPath)
            throw ServiceError.invalidArgument(field: field, "\(fieldName(field)) must be an RFC 3339 time such as 2026-11-22T10:00:00Z")
        }
        return date
    }
}

extension ValueDecoder: SingleValueDecodingContainer {
    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool {
        guard case .bool(let flag) = value else { throw typeMismatch(codingPath, expected: "true or false", found: value) }
        return flag
    }
    func decode(_ type: String.Type) throws -> String {
        guard case .string(let string) = value else { throw typeMismatch(codingPath, expected: "a string", found: value) }
        return string
    }
    func decode(_ type: Double.Type) throws -> Double { try decodeFloatingPoint() }
    func decode(_ type: Float.Type) throws -> Float { Float(try decodeFloatingPoint()) }
    func decode(_ type: Int.Type) throws -> Int { try decodeInteger() }
    func decode(_ type: Int8.Type) throws -> Int8 { try decodeInteger() }
    func decode(_ type: Int16.Type) throws -> Int16 { try decodeInteger() }
    func decode(_ type: Int32.Type) throws -> Int32 { try decodeInteger() }
    func decode(_ type: Int64.Type) throws -> Int64 { try decodeInteger() }
    func decode(_ type: UInt.Type) throws -> UInt { try decodeInteger() }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try decodeInteger() }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try decodeInteger() }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try decodeInteger() }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try decodeInteger() }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decodeValue(type) }

    private func decodeFloatingPoint() throws -> Double {
        guard case .number(let number) = value else { throw typeMismatch(codingPath, expected: "a number", found: value) }
        let double = number.doubleValue
        guard double.isFinite else {
            let field = FieldPath.string(codingPath)
            throw ServiceError.invalidArgument(field: field, "\(fieldName(field)) is out of range")
        }
        return double
    }

    private func decodeInteger<T: FixedWidthInteger>() throws -> T {
        guard case .number(let number) = value else { throw typeMismatch(codingPath, expected: "a whole number", found: value) }
        if let integer = number.integerValue, let exact = T(exactly: integer) { return exact }
        // The field's name is spelled out only for the error.
        let field = FieldPath.string(codingPath)
        let double = number.doubleValue
        if number.integerValue == nil, double.isFinite, double.rounded() != double {
            throw ServiceError.invalidArgument(field: field, "\(fieldName(field)) must be a whole number")
        }
        throw ServiceError.invalidArgument(field: field, "\(fieldName(field)) is out of range")
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let object: JSONObject
    let codingPath: [any CodingKey]

    var allKeys: [Key] { object.keys.compactMap(Key.init(stringValue:)) }

    func contains(_ key: Key) -> Bool { object[key.stringValue] != nil }

    private func decoder(for key: Key) throws -> ValueDecoder {
        guard let value = object[key.stringValue] else { throw missing(FieldPath.string(codingPath + [key])) }
        return ValueDecoder(value: value, parentPath: codingPath, key: key)
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        object[key.stringValue].map { $0 == .null } ?? true
    }

    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try decoder(for: key).decode(type) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try decoder(for: key).decode(type) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try decoder(for: key).decode(type) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try decoder(for: key).decode(type) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try decoder(for: key).decode(type) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try decoder(for: key).decode(type) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try decoder(for: key).decode(type) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try decoder(for: key).decode(type) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try decoder(for: key).decode(type) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try decoder(for: key).decode(type) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try decoder(for: key).decode(type) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try decoder(for: key).decode(type) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try decoder(for: key).decode(type) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try decoder(for: key).decode(type) }
    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T { try decoder(for: key).decodeValue(type) }

    /// The decoder of an optional member, nil when it is absent or null: one lookup,
    /// where the protocol's default `decodeIfPresent` looks the key up three times
    /// (request bodies are mostly optional members).
    private func decoderIfPresent(for key: Key) -> ValueDecoder? {
        guard let value = object[key.stringValue] else { return nil }
        if case .null = value { return nil }
        return ValueDecoder(value: value, parentPath: codingPath, key: key)
    }

    func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: Float.Type, forKey key: Key) throws -> Float? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: Int8.Type, forKey key: Key) throws -> Int8? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: Int16.Type, forKey key: Key) throws -> Int16? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: Int32.Type, forKey key: Key) throws -> Int32? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: Int64.Type, forKey key: Key) throws -> Int64? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: UInt.Type, forKey key: Key) throws -> UInt? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: UInt8.Type, forKey key: Key) throws -> UInt8? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: UInt16.Type, forKey key: Key) throws -> UInt16? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: UInt32.Type, forKey key: Key) throws -> UInt32? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent(_ type: UInt64.Type, forKey key: Key) throws -> UInt64? { try decoderIfPresent(for: key)?.decode(type) }
    func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? { try decoderIfPresent(for: key)?.decodeValue(type) }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try decoder(for: key).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try decoder(for: key).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ValueDecoder(value: .object(object), parentPath: codingPath, key: nil)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        ValueDecoder(value: object[key.stringValue] ?? .null, parentPath: codingPath, key: key)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let elements: [JSONValue]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(elements: [JSONValue], codingPath: [any CodingKey]) {
        self.elements = elements
        self.codingPath = codingPath
    }

    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }

    private mutating func next() throws -> ValueDecoder {
        let key = AnyCodingKey(intValue: currentIndex)
        guard !isAtEnd else { throw missing(FieldPath.string(codingPath + [key])) }
        defer { currentIndex += 1 }
        return ValueDecoder(value: elements[currentIndex], parentPath: codingPath, key: key)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }

    mutating func decode(_ type: Bool.Type) throws -> Bool { try next().decode(type) }
    mutating func decode(_ type: String.Type) throws -> String { try next().decode(type) }
    mutating func decode(_ type: Double.Type) throws -> Double { try next().decode(type) }
    mutating func decode(_ type: Float.Type) throws -> Float { try next().decode(type) }
    mutating func decode(_ type: Int.Type) throws -> Int { try next().decode(type) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { try next().decode(type) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { try next().decode(type) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { try next().decode(type) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { try next().decode(type) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { try next().decode(type) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try next().decode(type) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try next().decode(type) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try next().decode(type) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try next().decode(type) }
    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T { try next().decodeValue(type) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        try next().container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        try next().unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder { try next() }
}

/// A body type that reads itself from its object member by member, for ops on hot
/// paths: `RequestEnvelope.decodeBody` uses this in place of its `Decodable`
/// conformance. `JSONFields` applies `JSONValueDecoder`'s rules and errors, so the
/// two agree when members are read in the order the type declares them (checked
/// by the type's tests).
public protocol FieldsDecodable {
    init(fields: JSONFields) throws
}

/// A body object's members, read one by one with `JSONValueDecoder`'s rules and
/// errors but without `Decodable`'s containers: those cost an existential box per
/// body and a few indirect calls and a path per member (several µs of a search).
public struct JSONFields {
    private let object: JSONObject

    public init(_ object: JSONObject) { self.object = object }

    /// A member's key in a coding path, small enough to sit in an existential's
    /// inline buffer (`AnyCodingKey` is not), so reading a member allocates nothing.
    private struct MemberKey: CodingKey {
        let stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// The member's decoder; nil when absent or null.
    private func member(_ key: String) -> ValueDecoder? {
        guard let value = object[key] else { return nil }
        if case .null = value { return nil }
        return ValueDecoder(value: value, parentPath: [], key: MemberKey(stringValue: key))
    }

    /// The member's decoder; `invalid_argument` when absent ("… is required", as
    /// for a required member of a `Decodable` type; null gives the same message).
    private func required(_ key: String) throws -> ValueDecoder {
        guard let value = object[key] else { throw missing(key) }
        return ValueDecoder(value: value, parentPath: [], key: MemberKey(stringValue: key))
    }

    public func double(_ key: String) throws -> Double { try required(key).decode(Double.self) }
    public func doubleIfPresent(_ key: String) throws -> Double? { try member(key)?.decode(Double.self) }
    public func intIfPresent(_ key: String) throws -> Int? { try member(key)?.decode(Int.self) }
    public func boolIfPresent(_ key: String) throws -> Bool? { try member(key)?.decode(Bool.self) }
    public func stringIfPresent(_ key: String) throws -> String? { try member(key)?.decode(String.self) }
    /// Any other type, through its `Decodable` conformance.
    public func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: String) throws -> T? {
        try member(key)?.decodeValue(type)
    }
}

/// An enum read from one of a fixed set of strings: an unknown string is
/// `invalid_argument` naming the strings allowed.
public protocol StringEnum: CaseIterable, RawRepresentable where RawValue == String {}

extension StringEnum {
    static var allowedValues: String { allCases.map(\.rawValue).joined(separator: ", ") }
}
