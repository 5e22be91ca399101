import Foundation

/// A request as a service reads it: frame 0's envelope fields and body, and the
/// binary frames after it.
public struct RequestEnvelope: Sendable {
    public var id: String
    public var op: String
    public var token: String?
    /// The end client's network address, as a front-end (the edge) relays it; heeded
    /// only from a service's key.
    public var origin: String?
    /// The body object; an omitted body is an empty object.
    public var body: JSONObject
    /// Frames 1…n.
    public var attachments: [Data]
    /// The size of frame 0 in bytes, for the op's own limit.
    public var frame0Bytes: Int

    public init(id: String, op: String, token: String? = nil, origin: String? = nil, body: JSONObject = JSONObject(),
                attachments: [Data] = [], frame0Bytes: Int = 0) {
        self.id = id
        self.op = op
        self.token = token
        self.origin = origin
        self.body = body
        self.attachments = attachments
        self.frame0Bytes = frame0Bytes
    }

    /// The size of all frames together.
    public var totalBytes: Int { frame0Bytes + attachments.reduce(0) { $0 + $1.count } }

    /// Decodes the body into an op's request type; failures name the field.
    public func decodeBody<Body: Decodable>(_ type: Body.Type) throws -> Body {
        if let reader = Body.self as? any FieldsDecodable.Type, let body = try reader.init(fields: JSONFields(body)) as? Body {
            return body
        }
        return try JSONValueDecoder().decode(type, from: .object(body))
    }
}

/// A request that could not be read, with the id to echo (empty when none was readable).
public struct EnvelopeError: Error, Sendable {
    public let requestID: String
    public let error: ServiceError
}

extension RequestEnvelope {
    /// Reads a request's frames, checking in the order the protocol fixes: frame 0 is
    /// one line holding a JSON object, then `v`, `id`, `op`, `token` and `body`.
    ///
    /// The op's own limits (frame 0 size, frame count) are checked by whoever knows
    /// the op; frames larger than any op allows are refused here, before parsing.
    public static func decode(frames: [Data]) throws(EnvelopeError) -> RequestEnvelope {
        try decode(frames: frames[...])
    }

    /// As `decode(frames:)`, for the frames after a ROUTER's routing frames. A slice
    /// rather than any collection: a generic here is not specialised across the
    /// module boundary, and its witness calls cost a few % of a search.
    public static func decode(frames: ArraySlice<Data>) throws(EnvelopeError) -> RequestEnvelope {
        guard let frame0 = frames.first, !frame0.isEmpty else {
            throw EnvelopeError(requestID: "", error: .badRequest("frame 0 is empty: it must hold the request's JSON object"))
        }
        guard frame0.count <= Limits.importFrame0Bytes else {
            // Refused unparsed; its id is stepped to, so the client that waits for the
            // answer by id gets it (a client multiplexing by id would drop an answer to "").
            var requestID = ""
            if case .string(let id)? = JSONMemberScanner.member("id", of: frame0), Identifier.isValidRequestID(id) { requestID = id }
            throw EnvelopeError(requestID: requestID, error: .tooLarge(
                "frame 0 is \(frame0.count) bytes, over the most any op takes (\(Limits.importFrame0Bytes); most take \(Limits.requestFrame0Bytes))"))
        }
        let object = try parseObject(frame0)
        var requestID = ""
        if case .string(let id)? = object["id"], Identifier.isValidRequestID(id) { requestID = id }
        func fail(_ message: String) -> EnvelopeError {
            EnvelopeError(requestID: requestID, error: .badRequest(message))
        }

        guard let version = object["v"] else { throw fail("v is required and must be 1") }
        guard case .number(let number) = version, number.integerValue == 1 else {
            throw fail("unsupported protocol version: v must be 1")
        }
        guard let idValue = object["id"] else { throw fail("id is required") }
        guard case .string(let id) = idValue, Identifier.isValidRequestID(id) else {
            throw fail("id must be 1–64 characters of A–Z, a–z, 0–9, '_' and '-'")
        }
        guard case .string(let op)? = object["op"] else { throw fail("op is required and must be a string") }
        var token: String?
        if let tokenValue = object["token"] {
            guard case .string(let text) = tokenValue else { throw fail("token must be a string") }
            token = text
        }
        var origin: String?
        if let originValue = object["origin"] {
            guard case .string(let text) = originValue, isValidOrigin(text) else {
                throw fail("origin must be 1–100 printable ASCII characters (a network address)")
            }
            origin = text
        }
        var body = JSONObject()
        if let bodyValue = object["body"] {
            guard case .object(let members) = bodyValue else { throw fail("body must be an object") }
            body = members
        }
        return RequestEnvelope(id: id, op: op, token: token, origin: origin, body: body,
                               attachments: Array(frames.dropFirst()), frame0Bytes: frame0.count)
    }

    private static func isValidOrigin(_ text: String) -> Bool {
        (1...100).contains(text.utf8.count) && text.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }

    private static func parseObject(_ frame0: Data) throws(EnvelopeError) -> JSONObject {
        // One line: a single trailing newline is allowed, none inside.
        var end = frame0.endIndex
        if frame0.last == 0x0A { end -= 1 }
        let hasInnerNewline = frame0.withUnsafeBytes { raw in
            raw.baseAddress.map { memchr($0, 0x0A, end - frame0.startIndex) != nil } ?? false
        }
        if hasInnerNewline {
            throw EnvelopeError(requestID: "", error: .badRequest("frame 0 must be one line of JSON: it holds a raw newline"))
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(frame0[frame0.startIndex..<end])
        } catch {
            throw EnvelopeError(requestID: "", error: .badRequest("frame 0 is not valid JSON: \(error)"))
        }
        guard case .object(let object) = value else {
            throw EnvelopeError(requestID: "", error: .badRequest("frame 0 must be a JSON object, not \(value.typeName)"))
        }
        return object
    }

    /// Frame 0 of a request as a client writes it.
    public static func encode(id: String, op: String, token: String?, origin: String? = nil, body: JSONValue) -> Data {
        var writer = JSONWriter()
        writer.appendASCII("{\"v\":1,\"id\":")
        writer.write(id)
        writer.appendASCII(",\"op\":")
        writer.write(op)
        if let token {
            writer.appendASCII(",\"token\":")
            writer.write(token)
        }
        if let origin {
            writer.appendASCII(",\"origin\":")
            writer.write(origin)
        }
        writer.appendASCII(",\"body\":")
        writer.write(body)
        writer.appendASCII("}")
        return Data(writer.bytes)
    }
}
