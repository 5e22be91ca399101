import Foundation
import Hummingbird
import HummingbirdCore
import Wire

/// A query parameter of a `GET` route and the JSON type its op's body field has.
/// Query strings carry only text: the edge reads each parameter as its field's type
/// and passes the body on; the service applies every other rule.
enum QueryParameter: Sendable {
    case string(String)
    case number(String)
    case integer(String)
    case bool(String)
    /// Comma-separated: `kinds=sight,restaurant`.
    case list(String)

    var name: String {
        switch self {
        case .string(let name), .number(let name), .integer(let name), .bool(let name), .list(let name): name
        }
    }

    /// The same kind of parameter under another name.
    func named(_ name: String) -> QueryParameter {
        switch self {
        case .string: .string(name)
        case .number: .number(name)
        case .integer: .integer(name)
        case .bool: .bool(name)
        case .list: .list(name)
        }
    }

    /// Reads the parameters that are present into a body; a malformed one, or one
    /// given twice, is `invalid_argument` naming it, with the message the service would give.
    static func body(_ parameters: [QueryParameter], from uri: URI, renaming: [String: String] = [:]) throws -> JSONObject {
        let query = FormQuery(uri)
        var body = JSONObject()
        for parameter in parameters {
            let values = query.values(of: parameter.name)
            guard let text = values.first else { continue }
            let field = renaming[parameter.name] ?? parameter.name
            guard values.count == 1 else { throw Problem.invalidArgument(field, "\(field) is given more than once") }
            switch parameter {
            case .string:
                body[field] = .string(text)
            case .number:
                guard let number = Double(text) else { throw Problem.invalidArgument(field, "\(field) must be a number") }
                guard number.isFinite else { throw Problem.invalidArgument(field, "\(field) is out of range") }
                body[field] = .number(Int64(exactly: number).map { .integer($0) } ?? .double(number))
            case .integer:
                guard let number = Double(text) else { throw Problem.invalidArgument(field, "\(field) must be a whole number") }
                guard let integer = Int64(exactly: number) else {
                    throw Problem.invalidArgument(field, number.isFinite ? "\(field) must be a whole number" : "\(field) is out of range")
                }
                body[field] = .number(.integer(integer))
            case .bool:
                switch text.lowercased() {
                case "true", "1": body[field] = .bool(true)
                case "false", "0": body[field] = .bool(false)
                default: throw Problem.invalidArgument(field, "\(field) must be true or false")
                }
            case .list:
                body[field] = .array(text.isEmpty ? [] : text.split(separator: ",", omittingEmptySubsequences: false).map { .string(String($0)) })
            }
        }
        return body
    }
}

/// A query string as browsers' `URLSearchParams`, HTML forms and most HTTP clients
/// write it (`application/x-www-form-urlencoded`): `&`-separated `name=value` pairs,
/// `+` for a space, percent escapes decoded as UTF-8 in names and values alike. An
/// escape that is not valid UTF-8 is kept as written, so the field that holds it is
/// refused by its own rules rather than the whole request.
struct FormQuery: Sendable {
    let items: [(name: String, value: String)]

    init(_ uri: URI) { self.init(uri.query ?? "") }

    init(_ query: String) {
        items = query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (Self.decoded(parts[0]), parts.count == 2 ? Self.decoded(parts[1]) : "")
        }
    }

    subscript(name: String) -> String? { items.first { $0.name == name }?.value }

    func values(of name: String) -> [String] { items.filter { $0.name == name }.map(\.value) }

    /// `+` as a space and percent escapes as UTF-8 bytes, read byte by byte
    /// (Foundation's `removingPercentEncoding` took a tenth of the edge's CPU per
    /// search). A malformed escape, or bytes that are not UTF-8, leave the text as
    /// written (with its spaces).
    static func decoded(_ text: Substring) -> String {
        let utf8 = text.utf8
        let plus = UInt8(ascii: "+"), percent = UInt8(ascii: "%")
        guard utf8.contains(where: { $0 == plus || $0 == percent }) else { return String(text) }
        var bytes = [UInt8]()
        bytes.reserveCapacity(utf8.count)
        var escapesHold = true
        var index = utf8.startIndex
        while index != utf8.endIndex {
            let byte = utf8[index]
            utf8.formIndex(after: &index)
            switch byte {
            case plus:
                bytes.append(UInt8(ascii: " "))
            case percent:
                guard escapesHold, index != utf8.endIndex, let high = hexValue(utf8[index]) else { escapesHold = false; bytes.append(byte); continue }
                let next = utf8.index(after: index)
                guard next != utf8.endIndex, let low = hexValue(utf8[next]) else { escapesHold = false; bytes.append(byte); continue }
                bytes.append(high << 4 | low)
                index = utf8.index(after: next)
            default:
                bytes.append(byte)
            }
        }
        if escapesHold, let decoded = String(validating: bytes, as: UTF8.self) { return decoded }
        return String(decoding: utf8.map { $0 == plus ? UInt8(ascii: " ") : $0 }, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
