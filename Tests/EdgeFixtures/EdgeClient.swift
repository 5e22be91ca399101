import Foundation
import Wire

/// An app talking to the edge over HTTP/1.1, as a test drives it: one request per
/// connection, the caller's bearer token on each, JSON in and out.
public struct EdgeClient: Sendable {
    public let port: Int
    public var token: String?
    /// Sent on every request (e.g. `X-Forwarded-For` through a trusted proxy).
    public var headers: [(String, String)] = []
    /// The local address requests are sent from; the kernel's choice (127.0.0.1) when nil.
    public var source: String?

    public init(port: Int, token: String? = nil) {
        self.port = port
        self.token = token
    }

    /// Sends a request and reads its response.
    public func send(_ method: String, _ path: String, headers: [(String, String)] = [], body: Data? = nil,
                     contentType: String? = nil) throws -> HTTPReply {
        let connection = try RawConnection(port: port, source: source)
        connection.send(Self.request(method, path, port: port, token: token, headers: [("Connection", "close")] + self.headers + headers,
                                     body: body, contentType: contentType))
        return try connection.receiveResponse(to: method)
    }

    /// A request's bytes: its head (with the bearer token, when there is one) and body.
    static func request(_ method: String, _ path: String, port: Int, token: String?, headers: [(String, String)], body: Data?,
                        contentType: String?) -> Data {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body {
            if let contentType { head += "Content-Type: \(contentType)\r\n" }
            head += "Content-Length: \(body.count)\r\n"
        }
        return Data((head + "\r\n").utf8) + (body ?? Data())
    }

    public func get(_ path: String, headers: [(String, String)] = []) throws -> HTTPReply {
        try send("GET", path, headers: headers)
    }

    public func delete(_ path: String, headers: [(String, String)] = []) throws -> HTTPReply {
        try send("DELETE", path, headers: headers)
    }

    /// A request with a JSON body (none for nil).
    public func send(_ method: String, _ path: String, json: JSONObject?, headers: [(String, String)] = []) throws -> HTTPReply {
        try send(method, path, headers: headers, body: json.map { JSONWriter.data(.object($0)) },
                 contentType: json == nil ? nil : "application/json")
    }

    public func post(_ path: String, _ json: JSONObject? = nil, headers: [(String, String)] = []) throws -> HTTPReply {
        try send("POST", path, json: json, headers: headers)
    }

    public func put(_ path: String, _ json: JSONObject? = nil, headers: [(String, String)] = []) throws -> HTTPReply {
        try send("PUT", path, json: json, headers: headers)
    }

    public func patch(_ path: String, _ json: JSONObject, headers: [(String, String)] = []) throws -> HTTPReply {
        try send("PATCH", path, json: json, headers: headers)
    }

    /// The same client acting for the user whose token this is.
    public func signed(_ token: String) -> EdgeClient {
        var client = self
        client.token = token
        return client
    }

    /// The same client sending from another local address (another client to the edge).
    public func from(_ source: String) -> EdgeClient {
        var client = self
        client.source = source
        return client
    }
}

/// One keep-alive HTTP/1.1 connection to the edge, as an app's HTTP stack keeps
/// one: requests one after another on it, a new connection when the edge has closed
/// it. A request that meets a connection the edge closed meanwhile (an idle one) is
/// sent once more on a new one, as HTTP clients do; give writes an
/// `Idempotency-Key` so that a second sending is applied once.
public final class KeepAliveHTTP {
    public let port: Int
    private var connection: RawConnection?

    public init(port: Int) { self.port = port }

    public func send(_ method: String, _ path: String, token: String? = nil, headers: [(String, String)] = [], body: Data? = nil,
                     contentType: String? = nil) throws -> HTTPReply {
        let bytes = EdgeClient.request(method, path, port: port, token: token, headers: headers, body: body, contentType: contentType)
        var lastFailure: (any Error)?
        for _ in 0..<2 {
            let reused = connection != nil
            let connection = try self.connection ?? RawConnection(port: port)
            self.connection = connection
            do {
                guard connection.send(bytes) else { throw RawConnection.Failure(description: "the edge closed the connection") }
                let reply = try connection.receiveResponse(to: method)
                if reply.header("Connection")?.lowercased() == "close" { self.connection = nil }
                return reply
            } catch {
                self.connection = nil
                lastFailure = error
                if !reused { break }
            }
        }
        throw lastFailure ?? RawConnection.Failure(description: "no answer from the edge")
    }
}

public extension HTTPReply {
    /// The body as JSON.
    func json() throws -> JSONValue { try JSONParser.parse(body) }

    /// The body as a JSON object (a `{}` for an empty body).
    func object() throws -> JSONObject {
        if body.isEmpty { return JSONObject() }
        guard case .object(let object) = try json() else { throw RawConnection.Failure(description: "not an object: \(text)") }
        return object
    }

    /// The body decoded as the protocol's type.
    func decode<Value: Decodable>(_ type: Value.Type) throws -> Value {
        try JSONValueDecoder().decode(type, from: body)
    }

    /// The problem's `code`, for an error reply.
    var problemCode: String? { (try? object())?["code"]?.stringValue }
}

public extension JSONValue {
    subscript(key: String) -> JSONValue? { objectValue?[key] }

    var doubleValue: Double? {
        if case .number(let number) = self { return number.doubleValue }
        return nil
    }
}
