import Foundation

/// Frame 0 of a reply: `{"v":1,"id":…,"ok":true,"body":{…}}` or
/// `{"v":1,"id":…,"ok":false,"error":{…}}`.
public enum ReplyEnvelope {
    /// A success reply around a body that is already JSON text.
    /// Concrete bytes, not any sequence: a generic append from another module is
    /// not specialised and copied a large reply through the runtime's generic path.
    public static func success(id: String, rawBody: [UInt8]) -> Data {
        var writer = JSONWriter(capacity: rawBody.count + id.utf8.count + 40)
        writer.appendASCII("{\"v\":1,\"id\":")
        writer.write(id)
        writer.appendASCII(",\"ok\":true,\"body\":")
        writer.writeRaw(rawBody)
        writer.appendASCII("}")
        return Data(writer.bytes)
    }

    public static func success(id: String, body: JSONValue) -> Data {
        var writer = JSONWriter()
        writer.appendASCII("{\"v\":1,\"id\":")
        writer.write(id)
        writer.appendASCII(",\"ok\":true,\"body\":")
        writer.write(body)
        writer.appendASCII("}")
        return Data(writer.bytes)
    }

    public static func failure(id: String, error: ServiceError) -> Data {
        var object = JSONObject([("code", .string(error.code.rawValue)), ("message", .string(error.message))])
        if let field = error.field { object["field"] = .string(field) }
        if let retryAfterMs = error.retryAfterMs { object["retryAfterMs"] = .number(.integer(Int64(retryAfterMs))) }
        var writer = JSONWriter()
        writer.appendASCII("{\"v\":1,\"id\":")
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
        let prefix = Array(#"{"v":1,"id":""#.utf8)
        if frame0.count > prefix.count, frame0.starts(with: prefix) {
            let start = frame0.startIndex + prefix.count
            if let end = frame0[start...].firstIndex(of: UInt8(ascii: "\"")) {
                let id = frame0[start..<end]
                if id.allSatisfy(Identifier.isIDByte) { return String(decoding: id, as: UTF8.self) }
            }
        }
        guard case .object(let object)? = try? JSONParser.parse(frame0), case .string(let id)? = object["id"] else { return nil }
        return id
    }

    /// The body of a success reply as JSON text, without parsing it when frame 0 is
    /// laid out as `success(id:rawBody:)` writes it; nil for a failure.
    public static func successBody(of frame0: Data) -> Data? {
        if let id = requestID(of: frame0) {
            var prefix = Array(#"{"v":1,"id":""#.utf8)
            prefix += Array(id.utf8)
            prefix += Array(#"","ok":true,"body":"#.utf8)
            if frame0.count > prefix.count, frame0.starts(with: prefix), frame0.last == UInt8(ascii: "}") {
                return Data(frame0[(frame0.startIndex + prefix.count)..<(frame0.endIndex - 1)])
            }
        }
        guard case .success(let body) = decode(frame0).result else { return nil }
        return JSONWriter.data(.object(body))
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
