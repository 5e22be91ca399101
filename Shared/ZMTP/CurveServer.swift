import Crypto
import NIOCore

/// The server's side of CurveZMQ (ZeroMQ RFC 26), as libzmq's CURVE server speaks it:
/// the client's HELLO (its transient key, proven with a box to the server's permanent
/// key) answered by WELCOME (the server's transient key and a cookie), the client's
/// INITIATE (the cookie back, its permanent key and a vouch for the transient one)
/// answered by READY once that key is allowed; then a `CurveSession`.
///
/// libzmq seals its cookie with a key of its own so that it need keep nothing between
/// WELCOME and INITIATE; a connection here keeps its state anyway, so its cookie is
/// random bytes that must come back unchanged.
final class CurveServer: CurveMechanism {
    /// The server's permanent key pair and the client keys it admits, 32 bytes each.
    struct Keys: Sendable {
        var publicKey: [UInt8]
        var secretKey: [UInt8]
        var allowed: Set<[UInt8]>
    }

    private let keys: Keys
    private let transient = Curve25519.KeyAgreement.PrivateKey()
    private var clientTransient: [UInt8]?
    private var cookie: [UInt8]?
    private var peerNonce: UInt64 = 0
    /// The traffic's seals, once INITIATE was accepted.
    var session: CurveSession?
    /// The client's permanent public key, once INITIATE vouched for it.
    private(set) var clientKey: [UInt8]?

    init(keys: Keys) {
        self.keys = keys
    }

    /// HELLO in (version, 72 bytes of padding, the client's transient key, a short
    /// nonce and a box of 64 zero bytes), WELCOME out.
    func welcome(hello data: ByteBuffer) throws -> [UInt8] {
        let bytes = Array(data.readableBytesView)
        guard bytes.count == 194, bytes[0] == 1, bytes[1] == 0 else {
            throw ZMTPProtocolError(description: "the client's HELLO is not CurveZMQ 1.0's")
        }
        let clientTransient = Array(bytes[74..<106]), short = bytes[106..<114]
        let helloBox = try SecretBox(publicKey: clientTransient, secretKey: keys.secretKey)
        guard let opened = helloBox.open(bytes[114...], nonce: Array("CurveZMQHELLO---".utf8) + short),
              opened.count == 64, opened.allSatisfy({ $0 == 0 }) else {
            throw ZMTPProtocolError(description: "the client's HELLO does not open with this server's key")
        }
        self.clientTransient = clientTransient
        peerNonce = CurveSession.uint64(short)
        let cookie = CurveSession.randomBytes(96)
        self.cookie = cookie
        let longNonce = CurveSession.randomBytes(16)
        let sealed = helloBox.seal(Array(transient.publicKey.rawRepresentation) + cookie, nonce: Array("WELCOME-".utf8) + longNonce)
        return ZMTPWire.command("WELCOME", longNonce + sealed)
    }

    /// INITIATE in (the cookie, a short nonce, and a box of the client's permanent key,
    /// its vouch and its metadata); the metadata once the client is admitted.
    func accept(initiate data: ByteBuffer) throws -> [(name: String, value: [UInt8])] {
        let bytes = Array(data.readableBytesView)
        guard let clientTransient, let cookie, bytes.count >= 96 + 8 + SecretBox.tagBytes + 128,
              bytes[0..<96].elementsEqual(cookie) else {
            throw ZMTPProtocolError(description: "the client's INITIATE does not carry this connection's cookie")
        }
        let short = bytes[96..<104]
        let number = CurveSession.uint64(short)
        let session = try SecretBox(publicKey: clientTransient, secretKey: Array(transient.rawRepresentation))
        guard number > peerNonce, let opened = session.open(bytes[104...], nonce: Array("CurveZMQINITIATE".utf8) + short),
              opened.count >= 128 else {
            throw ZMTPProtocolError(description: "the client's INITIATE does not open, or repeats a nonce")
        }
        let clientKey = Array(opened[0..<32])
        let vouchBox = try SecretBox(publicKey: clientKey, secretKey: Array(transient.rawRepresentation))
        guard let vouch = vouchBox.open(opened[48..<128], nonce: Array("VOUCH---".utf8) + opened[32..<48]),
              vouch.count == 64, vouch[0..<32].elementsEqual(clientTransient), vouch[32..<64].elementsEqual(keys.publicKey) else {
            throw ZMTPProtocolError(description: "the client's vouch does not open, or names other keys")
        }
        guard let metadata = ZMTPWire.parseProperties(opened[128...]) else {
            throw ZMTPProtocolError(description: "the client's metadata is malformed")
        }
        guard keys.allowed.contains(clientKey) else { throw CurveRefusal() }
        peerNonce = number
        self.clientKey = clientKey
        self.session = CurveSession(box: session, sendPrefix: Array("CurveZMQMESSAGES".utf8),
                                    receivePrefix: Array("CurveZMQMESSAGEC".utf8), nonce: 1, peerNonce: number)
        return metadata
    }

    /// READY: this side's metadata, sealed.
    func ready(metadata: [(String, String)]) -> [UInt8] {
        guard var session else { return [] }
        let short = session.nextNonce()
        let sealed = session.box.seal(ZMTPWire.properties(metadata), nonce: Array("CurveZMQREADY---".utf8) + short)
        self.session = session
        return ZMTPWire.command("READY", short + sealed)
    }
}

/// A client whose permanent key is not among those admitted (libzmq's ZAP status 400).
struct CurveRefusal: Error {}
