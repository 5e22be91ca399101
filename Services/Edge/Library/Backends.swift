import Contracts
import Foundation
import HTTPTypes
import Logging
import Hummingbird
import NIOCore
import NIOPosix
import ServiceClient
import Wire
import ZMTP

/// The five services as the edge calls them: one multiplexed client each.
final class Backends: Sendable {
    private let clients: [String: AsyncServiceClient]

    /// - Parameter logger: where a service refusing the edge's connections is told of
    ///   (nil for a second set of clients to the same services).
    init(settings: EdgeSettings, logger: Logger? = nil) throws {
        var clients: [String: AsyncServiceClient] = [:]
        for service in ServiceEndpoints.services {
            let curve = try settings.curve(of: service)
            clients[service] = try AsyncServiceClient(.init(
                service: service, endpoint: settings.endpoint(of: service), timeout: settings.serviceTimeout,
                tries: settings.serviceTries, curve: curve)) { endpoint in
                // Asked from the event loops themselves (ZMTP by NIO); `inproc://` through libzmq.
                guard ZMTPLink.supports(endpoint) else { return nil }
                return try ZMTPLink(service: service, endpoint: endpoint, curve: curve, timeout: settings.serviceTimeout,
                                    group: .singleton, logger: logger)
            }
        }
        self.clients = clients
    }

    func client(_ service: String) -> AsyncServiceClient {
        clients[service]!
    }

    func close() {
        clients.values.forEach { $0.close() }
    }

    /// Calls `op` for an HTTP request: with the caller's bearer token, the client's
    /// address as the origin, and as its id the request's `Idempotency-Key` (so a
    /// retried POST is applied once) or a fresh one.
    func call(_ op: String, _ body: JSONObject = JSONObject(), for request: Request, context: EdgeContext,
              attachments: [Data] = []) async throws -> AsyncServiceClient.RawReply {
        let service = String(op.prefix { $0 != "." })
        return try await client(service).callRaw(op: op, body: .object(body), token: try request.bearerToken(),
                                                 origin: context.clientAddress, attachments: attachments,
                                                 id: try request.idempotencyKey())
    }

    /// Calls a typed op for an HTTP request and decodes its reply; a failure is thrown.
    func call<Body: Encodable & Sendable, Response: Decodable>(_ op: String, _ body: Body, for request: Request,
                                                               context: EdgeContext, as: Response.Type) async throws -> Response {
        guard case .object(let object) = try JSONValueEncoder().encode(body) else { throw ServiceError.internal }
        return try await call(op, object, for: request, context: context).decoded(as: Response.self)
    }
}

extension AsyncServiceClient.RawReply {
    /// The reply's body as JSON text; its error, thrown.
    func body() throws -> Data {
        if let body = ReplyEnvelope.successBody(of: frame0) { return body }
        if case .failure(let error) = envelope.result { throw error }
        throw ServiceError.internal
    }

    func decoded<Value: Decodable>(as type: Value.Type) throws -> Value {
        switch envelope.result {
        case .failure(let error): throw error
        case .success(let object): return try JSONValueDecoder().decode(type, from: .object(object))
        }
    }
}

extension HTTPFields {
    /// The token of `Authorization: Bearer …`, nil without the header; any other
    /// scheme is `unauthenticated`.
    func bearerToken() throws -> String? {
        guard let header = self[.authorization] else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].isEmpty else {
            throw ServiceError.unauthenticated("Authorization must be Bearer <access token>")
        }
        return String(parts[1].trimmingCharacters(in: .whitespaces))
    }

    /// `Idempotency-Key`, which becomes the envelope's id: 1–64 of `A–Z a–z 0–9 _ -`.
    func idempotencyKey() throws -> String? {
        guard let key = self[.idempotencyKey] else { return nil }
        guard Identifier.isValidRequestID(key) else {
            throw Problem.badRequest("Idempotency-Key must be 1–64 characters of A–Z, a–z, 0–9, '_' and '-'")
        }
        return key
    }
}

extension Request {
    func bearerToken() throws -> String? { try headers.bearerToken() }

    func idempotencyKey() throws -> String? { try headers.idempotencyKey() }

    /// A JSON object body of at most `limit` bytes: none is `{}`; a declared length
    /// over the limit is refused before a byte of the body is read.
    mutating func jsonObject(limit: Int = EdgeSettings.jsonBodyBytes) async throws -> JSONObject {
        if let type = headers[.contentType], !type.lowercased().hasPrefix("application/json") {
            throw Problem(status: .unsupportedMediaType, code: .badRequest, "the body must be application/json, not \(type)")
        }
        let bytes = try await body(limit: limit)
        guard !bytes.isEmpty else { return JSONObject() }
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw Problem.badRequest("the body is not valid JSON: \(error)")
        }
        guard case .object(let object) = value else { throw Problem.badRequest("the body must be a JSON object, not \(value.typeName)") }
        return object
    }

    /// The body's bytes, at most `limit`; past it `too_large` (413), and when the
    /// length is declared, before any of it is read.
    mutating func body(limit: Int) async throws -> Data {
        if let length = headers[.contentLength].flatMap(Int.init), length > limit {
            throw Problem.tooLarge("the body is \(length) bytes, over the limit of \(limit)")
        }
        do {
            var buffer = try await collectBody(upTo: limit)
            return Data(buffer.readBytes(length: buffer.readableBytes) ?? [])
        } catch is NIOTooManyBytesError {
            throw Problem.tooLarge("the body is over the limit of \(limit) bytes")
        } catch {
            // Malformed chunked encoding and the like: the client's mistake.
            throw Problem.badRequest("the body could not be read as HTTP: \(error)")
        }
    }
}
