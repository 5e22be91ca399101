import Contracts
import Foundation
import ServiceClient
import Wire
import ZeroMQ

extension TokenVerifier {
    /// The verifier a service other than auth uses: auth's public keys from
    /// `HEREABOUTS_AUTH_PUBLIC_KEYS` when set (a JWKS document, `{"keys":[…]}`, as
    /// `auth.publicKey` returns it), otherwise fetched from auth on first need.
    public static func forService(_ settings: ServiceSettings) throws -> TokenVerifier {
        try forClient(environment: settings.environment, authEndpoint: settings.endpoints(of: AuthAPI.service).requests,
                      curve: try settings.clientCurve(of: AuthAPI.service))
    }

    /// The same for any client of the stack (the edge): keys from
    /// `HEREABOUTS_AUTH_PUBLIC_KEYS`, else fetched from auth at `authEndpoint`.
    public static func forClient(environment: [String: String], authEndpoint auth: String, curve: CurveRole?) throws -> TokenVerifier {
        if let text = environment["HEREABOUTS_AUTH_PUBLIC_KEYS"], !text.isEmpty {
            let keys: PublicKeysReply
            do {
                keys = try JSONValueDecoder().decode(PublicKeysReply.self, from: Data(text.utf8))
            } catch {
                throw ServiceError(code: .invalidArgument,
                                   message: "HEREABOUTS_AUTH_PUBLIC_KEYS is not a JWKS document ({\"keys\":[…]}): \(error)")
            }
            return try TokenVerifier(source: .fixed(keys.keys))
        }
        return try TokenVerifier(source: .fetched {
            let client = ServiceClient(service: AuthAPI.service, endpoint: auth, timeout: 2, tries: 2, curve: curve)
            defer { client.close() }
            return try client.call(AuthAPI.publicKey, Empty()).keys
        })
    }
}
