import Foundation

/// Encodes `Encodable` values to a `JSONValue` (and from there to one line of JSON).
///
/// `Date` is written as RFC 3339 UTC text; a non-finite number is an error, since
/// JSON has no form for it.
public struct JSONValueEncoder: Sendable {
    public init() {}

    public func encode<T: Encodable>(_ value: T) throws -> JSONValue {
        let root = EncodingSlot()
        try root.encodeValue(value, codingPath: [])
        return root.resolved
    }

    /// One line of JSON for `value`; `sortsKeys` gives a canonical text.
    public func encodeData<T: Encodable>(_ value: T, sortsKeys: Bool = false) throws -> Data {
        JSONWriter.data(try encode(value), sortsKeys: sortsKeys)
    }
}

/// A place in the document being built; containers fill it in by reference, since
/// Codable may hand out several containers for one value.
private final class EncodingSlot {
    enum Content {
        case empty
        case value(JSONValue)
        case object(ObjectStorage)
        case array(ArrayStorage)
    }

    var content: Content = .empty

    var resolved: JSONValue {
        switch content {
        case .empty: return .object(JSONObject())
        case .value(let value): return value
        case .object(let storage): return .object(JSONObject(storage.members.map { ($0.key, $0.slot.resolved) }))
        case .array(let storage): return .array(storage.elements.map(\.resolved))
        }
    }

    func objectStorage() -> ObjectStorage {
        if case .object(let storage) = content { return storage }
        let storage = ObjectStorage()
        content = .object(storage)
        return storage
    }

    func arrayStorage() -> ArrayStorage {
        if case .array(let storage) = content { return storage }
        let storage = ArrayStorage()
        content = .array(storage)
        return storage
    }

    func encodeValue<T: Encodable>(_ value: T, codingPath: [any CodingKey]) throws {
        // Types with a fixed JSON form of their own, ahead of their Codable conformances.
        if T.self == JSONValue.self {
            content = .value(value as! JSONValue)
        } else if T.self == Date.self {
            content = .value(.string(Timestamp.format(value as! Date)))
        } else {
            try value.encode(to: ValueEncoder(slot: self, codingPath: codingPath))
        }
    }

    func number(_ value: Double, _ codingPath: [any CodingKey]) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(value, .init(codingPath: codingPath, debugDescription: "JSON has no form for \(value)"))
        }
        return .number(.double(value))
    }
}

private final class ObjectStorage {
    var members: [(key: String, slot: EncodingSlot)] = []

    func slot(for key: String) -> EncodingSlot {
        if let existing = members.first(where: { $0.key == key }) { return existing.slot }
        let slot = EncodingSlot()
        members.append((key, slot))
        return slot
    }
}

private final class ArrayStorage {
    var elements: [EncodingSlot] = []

    func append() -> EncodingSlot {
        let slot = EncodingSlot()
        elements.append(slot)
        return slot
    }
}

private struct ValueEncoder: Encoder {
    let slot: EncodingSlot
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedContainer<Key>(storage: slot.objectStorage(), codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(storage: slot.arrayStorage(), codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { self }
}

extension ValueEncoder: SingleValueEncodingContainer {
    func encodeNil() { slot.content = .value(.null) }
    func encode(_ value: Bool) { slot.content = .value(.bool(value)) }
    func encode(_ value: String) { slot.content = .value(.string(value)) }
    func encode(_ value: Double) throws { slot.content = .value(try slot.number(value, codingPath)) }
    func encode(_ value: Float) throws { slot.content = .value(try slot.number(Double(value), codingPath)) }
    func encode(_ value: Int) { encodeInteger(value) }
    func encode(_ value: Int8) { encodeInteger(value) }
    func encode(_ value: Int16) { encodeInteger(value) }
    func encode(_ value: Int32) { encodeInteger(value) }
    func encode(_ value: Int64) { encodeInteger(value) }
    func encode(_ value: UInt) { encodeInteger(value) }
    func encode(_ value: UInt8) { encodeInteger(value) }
    func encode(_ value: UInt16) { encodeInteger(value) }
    func encode(_ value: UInt32) { encodeInteger(value) }
    func encode(_ value: UInt64) { encodeInteger(value) }
    func encode<T: Encodable>(_ value: T) throws { try slot.encodeValue(value, codingPath: codingPath) }

    private func encodeInteger<T: FixedWidthInteger>(_ value: T) {
        if let exact = Int64(exactly: value) {
            slot.content = .value(.number(.integer(exact)))
        } else {
            slot.content = .value(.number(.double(Double(value))))
        }
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let storage: ObjectStorage
    let codingPath: [any CodingKey]

    private func encoder(for key: Key) -> ValueEncoder {
        ValueEncoder(slot: storage.slot(for: key.stringValue), codingPath: codingPath + [key])
    }

    mutating func encodeNil(forKey key: Key) { encoder(for: key).encodeNil() }
    mutating func encode(_ value: Bool, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: String, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: Double, forKey key: Key) throws { try encoder(for: key).encode(value) }
    mutating func encode(_ value: Float, forKey key: Key) throws { try encoder(for: key).encode(value) }
    mutating func encode(_ value: Int, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: Int8, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: Int16, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: Int32, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: Int64, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: UInt, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: UInt8, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: UInt16, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: UInt32, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode(_ value: UInt64, forKey key: Key) { encoder(for: key).encode(value) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws { try encoder(for: key).encode(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        encoder(for: key).container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        encoder(for: key).unkeyedContainer()
    }

    mutating func superEncoder() -> any Encoder { encoder(for: Key(stringValue: "super")!) }
    mutating func superEncoder(forKey key: Key) -> any Encoder { encoder(for: key) }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let storage: ArrayStorage
    let codingPath: [any CodingKey]
    var count: Int { storage.elements.count }

    private func next() -> ValueEncoder {
        ValueEncoder(slot: storage.append(), codingPath: codingPath + [AnyCodingKey(intValue: count)])
    }

    mutating func encodeNil() { next().encodeNil() }
    mutating func encode(_ value: Bool) { next().encode(value) }
    mutating func encode(_ value: String) { next().encode(value) }
    mutating func encode(_ value: Double) throws { try next().encode(value) }
    mutating func encode(_ value: Float) throws { try next().encode(value) }
    mutating func encode(_ value: Int) { next().encode(value) }
    mutating func encode(_ value: Int8) { next().encode(value) }
    mutating func encode(_ value: Int16) { next().encode(value) }
    mutating func encode(_ value: Int32) { next().encode(value) }
    mutating func encode(_ value: Int64) { next().encode(value) }
    mutating func encode(_ value: UInt) { next().encode(value) }
    mutating func encode(_ value: UInt8) { next().encode(value) }
    mutating func encode(_ value: UInt16) { next().encode(value) }
    mutating func encode(_ value: UInt32) { next().encode(value) }
    mutating func encode(_ value: UInt64) { next().encode(value) }
    mutating func encode<T: Encodable>(_ value: T) throws { try next().encode(value) }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        next().container(keyedBy: keyType)
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { next().unkeyedContainer() }

    mutating func superEncoder() -> any Encoder { next() }
}
