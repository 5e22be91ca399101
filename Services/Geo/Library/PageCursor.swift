import Foundation
import Wire

/// Where a page ended: the sort's key and the id of the last hit, so the next page
/// starts strictly after it. Opaque to clients (base64url of a JSON array).
struct PageCursor: Equatable {
    enum Key: Equatable {
        /// A distance, a creation time or a rating, exactly (its bits are kept).
        case number(Double)
        /// A folded title.
        case text(String)
        /// Only the id orders (`geo.within`).
        case idOnly
    }

    var sort: String
    var key: Key
    var id: String

    var encoded: String {
        var writer = JSONWriter(capacity: 96)
        let keyText: String
        switch key {
        case .number(let value): keyText = "n" + String(value.bitPattern, radix: 16)
        case .text(let text): keyText = "t" + text
        case .idOnly: keyText = "-"
        }
        writer.write([sort, keyText, id])
        return Base64URL.encode(writer.bytes)
    }

    /// The cursor in `text`, made for `sort`; anything else is `invalid_argument`.
    init(decoding text: String, sort: String) throws {
        let invalid = ServiceError.invalidArgument(field: "cursor", "cursor is not one this search returned")
        guard let data = Base64URL.decode(text), let value = try? JSONParser.parse(data),
              case .array(let parts) = value, parts.count == 3,
              let sortName = parts[0].stringValue, let keyText = parts[1].stringValue, let id = parts[2].stringValue,
              sortName == sort, Identifier.isValidEntityID(id), let tag = keyText.first
        else { throw invalid }
        switch tag {
        case "n":
            guard let bits = UInt64(keyText.dropFirst(), radix: 16) else { throw invalid }
            key = .number(Double(bitPattern: bits))
        case "t": key = .text(String(keyText.dropFirst()))
        case "-": key = .idOnly
        default: throw invalid
        }
        self.sort = sortName
        self.id = id
    }

    init(sort: String, key: Key, id: String) {
        self.sort = sort
        self.key = key
        self.id = id
    }
}
