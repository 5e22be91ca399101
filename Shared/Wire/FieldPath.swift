/// Names a field by its path in a request body, the way `error.field` reports it:
/// `lat`, `contact.showEmail`, `posts[3].hours`.
public enum FieldPath {
    public static func string(_ codingPath: [any CodingKey]) -> String {
        var path = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue.hasPrefix("Index ") || key.stringValue == String(index) {
                path += "[\(index)]"
            } else {
                if !path.isEmpty { path += "." }
                path += key.stringValue
            }
        }
        return path
    }

    public static func string(_ codingPath: [any CodingKey], appending key: any CodingKey) -> String {
        string(codingPath + [key])
    }
}

/// A coding key for array elements and for keys known only at run time.
public struct AnyCodingKey: CodingKey, Sendable {
    public let stringValue: String
    public let intValue: Int?

    public init(stringValue: String) {
        self.stringValue = stringValue
        self.intValue = nil
    }

    public init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }

    public init(_ string: String) { self.init(stringValue: string) }
}
