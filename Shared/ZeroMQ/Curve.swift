import CZeroMQ
import Foundation

/// A CurveZMQ key pair as Z85 text (40 characters each).
public struct CurveKeyPair: Sendable, Equatable {
    public let publicKey: String
    public let secretKey: String

    public init(publicKey: String, secretKey: String) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }

    public static func generate() throws(ZMQError) -> CurveKeyPair {
        var publicKey = [CChar](repeating: 0, count: 41)
        var secretKey = [CChar](repeating: 0, count: 41)
        try check("zmq_curve_keypair") { zmq_curve_keypair(&publicKey, &secretKey) }
        return CurveKeyPair(publicKey: z85String(publicKey), secretKey: z85String(secretKey))
    }

    /// The public key that belongs to a secret key.
    public static func publicKey(forSecretKey secretKey: String) throws(ZMQError) -> String {
        var publicKey = [CChar](repeating: 0, count: 41)
        try check("zmq_curve_public") { zmq_curve_public(&publicKey, secretKey) }
        return z85String(publicKey)
    }
}

/// ZeroMQ's Z85 text encoding of binary keys (RFC 32).
public enum Z85 {
    /// Encodes bytes whose count is a multiple of 4.
    public static func encode(_ bytes: Data) -> String? {
        guard bytes.count % 4 == 0 else { return nil }
        var text = [CChar](repeating: 0, count: bytes.count * 5 / 4 + 1)
        let ok = bytes.withUnsafeBytes { raw in
            zmq_z85_encode(&text, raw.bindMemory(to: UInt8.self).baseAddress, bytes.count) != nil
        }
        return ok ? z85String(text) : nil
    }

    /// Decodes text whose length is a multiple of 5.
    public static func decode(_ text: String) -> Data? {
        guard text.utf8.count % 5 == 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: text.utf8.count * 4 / 5)
        guard zmq_z85_decode(&bytes, text) != nil else { return nil }
        return Data(bytes)
    }
}

private func z85String(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
}

/// How a socket secures its connections with CURVE (nil: plaintext).
public enum CurveRole: Sendable, Equatable {
    /// A server (ROUTER, PUB): its secret key; each client is checked by the
    /// context's ZAP handler, and refused when there is none.
    case server(secretKey: String)
    /// A client of a server whose public key it knows, with its own key pair.
    case client(CurveKeyPair, serverKey: String)
}

extension Socket {
    /// Applies `role` before the socket binds or connects; nothing for nil.
    public func secure(_ role: CurveRole?) throws(ZMQError) {
        switch role {
        case nil:
            return
        case .server(let secretKey):
            try set(.curveServer(true))
            try set(.curveSecretKey(secretKey))
            try set(.zapDomain(ZAPAuthenticator.domain))
            try set(.zapEnforceDomain(true))
        case .client(let keys, let serverKey):
            try set(.curveServerKey(serverKey))
            try set(.curvePublicKey(keys.publicKey))
            try set(.curveSecretKey(keys.secretKey))
        }
    }
}
