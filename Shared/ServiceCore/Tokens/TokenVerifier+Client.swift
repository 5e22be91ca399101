import Contracts
import Foundation
import ServiceClient
import Wire
import ZeroMQ

extension TokenVerifier {
    /// The verifier a client of the stack uses (the edge; a service, `forService`): keys from
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
