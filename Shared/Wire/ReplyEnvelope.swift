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
