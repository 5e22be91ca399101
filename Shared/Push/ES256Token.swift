import Crypto
import Foundation

/// A compact JWS signed with ES256 (ECDSA P-256 with SHA-256), as APNs' provider tokens
/// and VAPID's tokens are: `base64url(header).base64url(claims).base64url(r‖s)`.
enum ES256Token {
    static func sign(header: [String: String], claims: [String: any Sendable], with key: P256.Signing.PrivateKey) throws -> String {
        let headerJSON = try JSONSerialization.data(withJSONObject: header.merging(["alg": "ES256", "typ": "JWT"]) { mine, _ in mine },
                                                    options: [.sortedKeys])
        let claimsJSON = try JSONSerialization.data(withJSONObject: claims, options: [.sortedKeys])
        let signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(claimsJSON)
        let signature = try key.signature(for: Data(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature.rawRepresentation)
    }
}

/// Base64 with the URL alphabet and no padding (RFC 4648 §5), as JWTs and Web Push keys are written.
public enum Base64URL {
    public static func encode(_ data: some DataProtocol) -> String {
        Data(data).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Nil for text that is not base64url (padding is accepted, as some browsers send it).
    public static func decode(_ text: String) -> Data? {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while base64.hasSuffix("=") { base64.removeLast() }
        guard base64.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "+" || $0 == "/") }) else { return nil }
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        return Data(base64Encoded: base64)
    }
}
