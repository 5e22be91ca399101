import Contracts
import Foundation
import ServiceCore

extension TokenVerifier {
    /// The verifier a service other than auth uses: auth's public keys from
    /// `HEREABOUTS_AUTH_PUBLIC_KEYS` when set (a JWKS document, `{"keys":[…]}`, as
    /// `auth.publicKey` returns it), otherwise fetched from auth on first need.
    public static func forService(_ settings: ServiceSettings) throws -> TokenVerifier {
        try forClient(environment: settings.environment, authEndpoint: settings.endpoints(of: AuthAPI.service).requests,
                      curve: try settings.clientCurve(of: AuthAPI.service))
    }
}
