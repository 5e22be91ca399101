/// A field of an update: left alone (absent), cleared (`null`) or set.
public enum Patch<Value: Codable & Sendable & Equatable>: Sendable, Equatable {
    case unchanged
    case cleared
    case set(Value)

    public var isUnchanged: Bool { self == .unchanged }

    /// The value after applying the patch to `current`.
    public func applied(to current: Value?) -> Value? {
        switch self {
        case .unchanged: current
        case .cleared: nil
        case .set(let value): value
        }
    }
}

extension KeyedDecodingContainer {
    public func decodePatch<Value>(_ type: Value.Type, forKey key: Key) throws -> Patch<Value> {
        guard contains(key) else { return .unchanged }
        if try decodeNil(forKey: key) { return .cleared }
        return .set(try decode(Value.self, forKey: key))
    }
}

extension KeyedEncodingContainer {
    public mutating func encodePatch<Value>(_ patch: Patch<Value>, forKey key: Key) throws {
        switch patch {
        case .unchanged: break
        case .cleared: try encodeNil(forKey: key)
        case .set(let value): try encode(value, forKey: key)
        }
    }
}
