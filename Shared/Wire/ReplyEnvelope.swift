import Foundation

/// Frame 0 of a reply: `{"v":1,"id":…,"ok":true,"body":{…}}` or
/// `{"v":1,"id":…,"ok":false,"error":{…}}`.
public enum ReplyEnvelope {
    /// A success reply around a body that is already JSON text.
    /// Concrete bytes, not any sequence: a generic append from another module is
    /// not specialised and copied a large reply through the runtime's generic path.
    public static func success(id: String, rawBody: [UInt8]) -> Data {
        var writer = JSONWriter(capacity: rawBody.count + id.utf8.count + 40)
        writer.appendASCII(head)
        writer.write(id)
        writer.appendASCII(successTail)
        writer.writeRaw(rawBody)
        writer.appendASCII("}")
        return Data(writer.bytes)
    }

    public static func success(id: String, body: JSONValue) -> Data {
        var writer = JSONWriter()
        writer.appendASCII(head)
        writer.write(id)
        writer.appendASCII(successTail)
        writer.write(body)
        writer.appendASCII("}")
        return Data(writer.bytes)
    }

    public static func failure(id: String, error: ServiceError) -> Data {
        var object = JSONObject([("code", .string(error.code.rawValue)), ("message", .string(error.message))])
        if let field = error.field { object["field"] = .string(field) }
        if let retryAfterMs = error.retryAfterMs { object["retryAfterMs"] = .number(.integer(Int64(retryAfterMs))) }
        var writer = JSONWriter()
        writer.appendASCII(head)
        writer.write(id)
        writer.appendASCII(",\"ok\":false,\"error\":")
        writer.write(.object(object))
        writer.appendASCII("}")
        return Data(writer.bytes)
    }

    /// The id a reply echoes. Services write frame 0 as `{"v":1,"id":"…",…` with an id of
    /// plain characters, so that prefix is read without parsing the rest; any other
    /// reply is parsed.
    public static func requestID(of frame0: Data) -> String? {
        let written = frame0.withUnsafeBytes { frame in
            writtenID(in: frame).map { String(decoding: UnsafeRawBufferPointer(rebasing: frame[$0]), as: UTF8.self) }
        }
        if let written { return written }
        guard case .object(let object)? = try? JSONParser.parse(frame0), case .string(let id)? = object["id"] else { return nil }
        return id
    }

    /// The body of a success reply as JSON text, without parsing it when frame 0 is
    /// laid out as `success(id:rawBody:)` writes it; nil for a failure.
    public static func successBody(of frame0: Data) -> Data? {
        let written = frame0.withUnsafeBytes { frame -> Range<Int>? in
            guard let id = writtenID(in: frame) else { return nil }
            let marker = successMarker
            // The body lies between the marker and the envelope's closing brace.
            let start = id.upperBound + marker.count, end = frame.count - 1
            guard start < end, frame[end] == UInt8(ascii: "}"), frame[id.upperBound..<start].elementsEqual(marker) else { return nil }
            return start..<end
        }
        if let written { return Data(frame0[(frame0.startIndex + written.lowerBound)..<(frame0.startIndex + written.upperBound)]) }
        guard case .success(let body) = decode(frame0).result else { return nil }
        return JSONWriter.data(.object(body))
    }

    /// Frame 0 up to its id, and a success's from after the id up to its body, as
    /// written here: the readers below look for the same bytes (with the id's quotes).
    private static let head: StaticString = "{\"v\":1,\"id\":"
    private static let successTail: StaticString = ",\"ok\":true,\"body\":"

    /// What comes before the id in frame 0 as the services write it.
    private static let idPrefix = bytes(of: head) + [UInt8(ascii: "\"")]
    /// What follows the id in a success reply the services write, up to its body.
    private static let successMarker = [UInt8(ascii: "\"")] + bytes(of: successTail)

    private static func bytes(of text: StaticString) -> [UInt8] {
        Array(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Where the id is in `frame` (offsets from its start) when the frame begins as the
    /// services write it, `{"v":1,"id":"` and an id of plain characters up to a quote;
    /// nil for anything else, which is then parsed. Read over the bytes in place: every
    /// reply the edge passes on is looked at here twice (its request found, its body cut out).
    private static func writtenID(in frame: UnsafeRawBufferPointer) -> Range<Int>? {
        let prefix = idPrefix
        guard frame.count > prefix.count, frame[..<prefix.count].elementsEqual(prefix) else { return nil }
        var end = prefix.count
        while end < frame.count {
            let byte = frame[end]
            if byte == UInt8(ascii: "\"") { return prefix.count..<end }
            guard Identifier.isIDByte(byte) else { return nil }
            end += 1
        }
        return nil
    }

    /// A reply as a client reads it.
    public struct Decoded: Sendable {
        public let id: String
        public let result: Result<JSONObject, ServiceError>
    }

    /// Reads a reply's frame 0; a reply that breaks the protocol is reported as
    /// `internal`, since the client cannot act on it.
    public static func decode(_ frame0: Data) -> Decoded {
        func malformed(_ why: String) -> Decoded {
            Decoded(id: "", result: .failure(ServiceError(code: .internal, message: "malformed reply: \(why)")))
        }
        guard case .object(let object)? = try? JSONParser.parse(frame0) else { return malformed("not a JSON object") }
        guard case .string(let id)? = object["id"] else { return malformed("no id") }
        switch object["ok"] {
        case .bool(true)?:
            return Decoded(id: id, result: .success(object["body"]?.objectValue ?? JSONObject()))
        case .bool(false)?:
            guard let error = try? JSONValueDecoder().decode(ServiceError.self, from: object["error"] ?? .null) else {
                return malformed("error object missing or invalid")
            }
            return Decoded(id: id, result: .failure(error))
        default:
            return malformed("no ok flag")
        }
    }
}
