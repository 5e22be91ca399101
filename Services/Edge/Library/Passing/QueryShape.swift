import Foundation

/// The query parameters an op's request type takes: one per field, read as the
/// field's type asks (a number, a whole number, true or false, a comma-separated
/// list, else text), found once by decoding the type with a decoder that only notes
/// what it is asked for. So a route's query is its contract's, not a list by hand.
///
/// An optional field that is an object is no query parameter and is left out; a type
/// whose decoding needs a value the probe cannot make up (a required enum or object)
/// cannot be read, and is a programming error found when the route is declared.
enum QueryShape {
    static func parameters<Request: Decodable>(of type: Request.Type) -> [QueryParameter] {
        let noted = Noted()
        do {
            _ = try Request(from: FieldProbe(noted: noted))
        } catch {
            preconditionFailure("\(Request.self) cannot be read from a query: \(error)")
        }
        return noted.parameters
    }

    /// What the probe was asked for, in order.
    fileprivate final class Noted {
        var parameters: [QueryParameter] = []
    }
}

private struct Unreadable: Error {}

/// Decodes a request type's fields: notes each as it is asked for, answers optional
/// ones with none and required ones with a zero of their type.
private struct FieldProbe: Decoder {
    let noted: QueryShape.Noted
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Fields<Key>(noted: noted))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw Unreadable() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw Unreadable() }

    /// Every key is there and not null, so an optional field of a plain type is asked
    /// for by its type (the standard library's `decodeIfPresent` does so).
    struct Fields<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let noted: QueryShape.Noted
        var codingPath: [any CodingKey] = []
        var allKeys: [Key] { [] }

        func contains(_ key: Key) -> Bool { true }
        func decodeNil(forKey key: Key) throws -> Bool { false }

        private func note(_ parameter: QueryParameter) { noted.parameters.append(parameter) }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { note(.bool(key.stringValue)); return false }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { note(.string(key.stringValue)); return "" }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { note(.number(key.stringValue)); return 0 }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { note(.number(key.stringValue)); return 0 }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { note(.integer(key.stringValue)); return 0 }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { note(.integer(key.stringValue)); return 0 }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { note(.integer(key.stringValue)); return 0 }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { note(.integer(key.stringValue)); return 0 }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { note(.integer(key.stringValue)); return 0 }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { note(.integer(key.stringValue)); return 0 }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { note(.integer(key.stringValue)); return 0 }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { note(.integer(key.stringValue)); return 0 }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { note(.integer(key.stringValue)); return 0 }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { note(.integer(key.stringValue)); return 0 }

        /// A field of another type (a date, an enum, a list): read as its decoding
        /// asks; only an optional one can be answered.
        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            if let parameter = KindProbe.parameter(for: type, named: key.stringValue) { note(parameter) }
            return nil
        }

        /// A required field of another type: a list can be answered (empty).
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            guard let parameter = KindProbe.parameter(for: type, named: key.stringValue),
                  let list = type as? any RangeReplaceableCollection.Type, let empty = list.init() as? T else { throw Unreadable() }
            note(parameter)
            return empty
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw Unreadable()
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw Unreadable() }
        func superDecoder() throws -> any Decoder { throw Unreadable() }
        func superDecoder(forKey key: Key) throws -> any Decoder { throw Unreadable() }
    }
}

/// Decodes one value, noting what its decoding asks for first.
private final class KindProbe: Decoder {
    var asked: ((String) -> QueryParameter)?
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    /// The query parameter a field of `type` is read from; nil for an object.
    static func parameter<T: Decodable>(for type: T.Type, named name: String) -> QueryParameter? {
        // A date is text (ISO 8601), whatever its Codable conformance asks for.
        if type == Date.self { return .string(name) }
        let probe = KindProbe()
        _ = try? T(from: probe)
        return probe.asked?(name)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw Unreadable() }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        asked = QueryParameter.list
        throw Unreadable()
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Value(probe: self) }

    /// Notes the type asked for and gives nothing: the value is never wanted.
    struct Value: SingleValueDecodingContainer {
        let probe: KindProbe
        var codingPath: [any CodingKey] = []

        func decodeNil() -> Bool { false }

        private func ask<T>(_ parameter: @escaping (String) -> QueryParameter) throws -> T {
            probe.asked = parameter
            throw Unreadable()
        }

        func decode(_ type: Bool.Type) throws -> Bool { try ask(QueryParameter.bool) }
        func decode(_ type: String.Type) throws -> String { try ask(QueryParameter.string) }
        func decode(_ type: Double.Type) throws -> Double { try ask(QueryParameter.number) }
        func decode(_ type: Float.Type) throws -> Float { try ask(QueryParameter.number) }
        func decode(_ type: Int.Type) throws -> Int { try ask(QueryParameter.integer) }
        func decode(_ type: Int8.Type) throws -> Int8 { try ask(QueryParameter.integer) }
        func decode(_ type: Int16.Type) throws -> Int16 { try ask(QueryParameter.integer) }
        func decode(_ type: Int32.Type) throws -> Int32 { try ask(QueryParameter.integer) }
        func decode(_ type: Int64.Type) throws -> Int64 { try ask(QueryParameter.integer) }
        func decode(_ type: UInt.Type) throws -> UInt { try ask(QueryParameter.integer) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try ask(QueryParameter.integer) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try ask(QueryParameter.integer) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try ask(QueryParameter.integer) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try ask(QueryParameter.integer) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T { try T(from: probe) }
    }
}
