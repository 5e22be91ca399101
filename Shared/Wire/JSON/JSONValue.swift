/// A parsed JSON document.
///
/// Objects keep their keys in document order; numbers keep whether they were written
/// as integers, so `3.5` for an integer field is caught with the field's name.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case number(JSONNumber)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The JSON type's name, for messages such as "lat must be a number, not a string".
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }

    public var objectValue: JSONObject? {
        if case .object(let object) = self { return object }
        return nil
    }

    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }
}

/// A JSON number as written: an integer literal that fits 64 bits, or anything else
/// as a double (which may be infinite when the literal overflows).
public enum JSONNumber: Sendable, Hashable {
    case integer(Int64)
    case double(Double)

    public var doubleValue: Double {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value
        }
    }

    /// 10^0 through 10^22: the powers of ten that are exact doubles, for reading and
    /// writing decimals without the float parser and printer.
    static let exactPowersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    /// The exact integer value, when there is one (`3`, `3.0`, `3e2`).
    public var integerValue: Int64? {
        switch self {
        case .integer(let value):
            return value
        case .double(let value):
            guard value.isFinite, value.rounded() == value,
                  value >= -9.223372036854775808e18, value < 9.223372036854775808e18 else { return nil }
            return Int64(value)
        }
    }
}

/// A JSON object's members in document order. Keys are unique: the parser refuses
/// a document that repeats one.
public struct JSONObject: Sendable, Equatable, Sequence {
    public private(set) var members: [(key: String, value: JSONValue)]

    public init() { members = [] }

    public init(_ members: [(key: String, value: JSONValue)]) { self.members = members }

    public var count: Int { members.count }
    public var isEmpty: Bool { members.isEmpty }
    public var keys: [String] { members.map(\.key) }

    public subscript(key: String) -> JSONValue? {
        get {
            // Lengths first: they are at hand inline, where comparing two different
            // strings is a call (a body's lookups are mostly of absent keys).
            let length = key.utf8.count
            for member in members where member.key.utf8.count == length && member.key == key { return member.value }
            return nil
        }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    public func makeIterator() -> IndexingIterator<[(key: String, value: JSONValue)]> {
        members.makeIterator()
    }

    /// Two objects are equal when they have the same members, in any order.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        guard lhs.count == rhs.count else { return false }
        return lhs.members.allSatisfy { rhs[$0.key] == $0.value }
    }
}

extension JSONObject: ExpressibleByDictionaryLiteral {
    /// Members in the literal's order.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self.init(elements.map { (key: $0.0, value: $0.1) })
    }
}

/// Literals, so that a body written in Swift reads like the JSON it is:
/// `["kind": "offer", "lat": 52.09, "tags": ["bike"]]`.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .number(.integer(value)) }
    public init(floatLiteral value: Double) { self = .number(.double(value)) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(JSONObject(elements.map { (key: $0.0, value: $0.1) }))
    }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: Codable {
    /// Generic decoding for decoders other than `JSONValueDecoder`, which hands the
    /// parsed value over directly.
    public init(from decoder: any Decoder) throws {
        if var array = try? decoder.unkeyedContainer() {
            var elements: [JSONValue] = []
            while !array.isAtEnd { elements.append(try array.decode(JSONValue.self)) }
            self = .array(elements)
        } else if let object = try? decoder.container(keyedBy: AnyCodingKey.self) {
            self = .object(JSONObject(try object.allKeys.map { ($0.stringValue, try object.decode(JSONValue.self, forKey: $0)) }))
        } else {
            let single = try decoder.singleValueContainer()
            if single.decodeNil() {
                self = .null
            } else if let flag = try? single.decode(Bool.self) {
                self = .bool(flag)
            } else if let integer = try? single.decode(Int64.self) {
                self = .number(.integer(integer))
            } else if let double = try? single.decode(Double.self) {
                self = .number(.double(double))
            } else {
                self = .string(try single.decode(String.self))
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var single = encoder.singleValueContainer()
            try single.encodeNil()
        case .bool(let flag):
            var single = encoder.singleValueContainer()
            try single.encode(flag)
        case .number(.integer(let integer)):
            var single = encoder.singleValueContainer()
            try single.encode(integer)
        case .number(.double(let double)):
            var single = encoder.singleValueContainer()
            try single.encode(double)
        case .string(let string):
            var single = encoder.singleValueContainer()
            try single.encode(string)
        case .array(let elements):
            var array = encoder.unkeyedContainer()
            for element in elements { try array.encode(element) }
        case .object(let object):
            var container = encoder.container(keyedBy: AnyCodingKey.self)
            for (key, value) in object { try container.encode(value, forKey: AnyCodingKey(key)) }
        }
    }
}
