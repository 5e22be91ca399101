import Foundation
import Wire

/// A keyset cursor over a growing sequence number (a list's seq, a conversation's
/// activity): opaque to clients, checked when it comes back.
public struct SeqCursor: Sendable {
    /// Tells one list's cursors from another's.
    public let tag: Character

    public init(tag: Character) { self.tag = tag }

    public func encode(_ seq: Int64) -> String { Base64URL.encode(Data("\(tag)\(seq)".utf8)) }

    /// The seq a cursor names; `invalid_argument` (`cursor`) for one this list did not make.
    public func decode(_ text: String) throws -> Int64 {
        guard let data = Base64URL.decode(text), let string = String(data: data, encoding: .utf8), string.first == tag,
              let seq = Int64(string.dropFirst()), seq > 0 else {
            throw ServiceError.invalidArgument(field: "cursor", "cursor is not one this service made")
        }
        return seq
    }
}
