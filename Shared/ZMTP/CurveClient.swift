import Crypto
import NIOCore

/// The client's side of CurveZMQ (ZeroMQ RFC 26), as libzmq's CURVE client speaks it:
/// HELLO with a transient key, the server's WELCOME (its transient key and a cookie),
/// INITIATE vouching for the transient key with the permanent one, the server's READY;
/// then a `CurveSession`.
final class CurveClient: CurveMechanism {
    /// The client's permanent key pair and the server's permanent public key, 32 bytes each.
    struct Keys: Sendable {
        var publicKey: [UInt8]
        var secretKey: [UInt8]
        var serverKey: [UInt8]
    }

    private let keys: Keys
    private let transient = Curve25519.KeyAgreement.PrivateKey()
    /// Sealed from the transient key to the server's permanent one (HELLO, WELCOME).
    private let helloBox: SecretBox
    /// Sealed from the transient key to the server's transient one, once WELCOME gave it.
    private var sessionBox: SecretBox?
    /// The traffic's seals, once READY came.
    var session: CurveSession?
    private var nonce: UInt64 = 1

    init(keys: Keys) throws {
        self.keys = keys
        helloBox = try SecretBox(publicKey: keys.serverKey, secretKey: Array(transient.rawRepresentation))
    }

    private func nextNonce() -> [UInt8] {
        defer { nonce += 1 }
        return CurveSession.bigEndian(nonce)
    }

    /// HELLO: version 1.0, 72 bytes of padding (so that HELLO is no smaller than
    /// WELCOME), the transient public key, and a box of 64 zero bytes that proves it.
    func hello() -> [UInt8] {
        let short = nextNonce()
        let signature = helloBox.seal([UInt8](repeating: 0, count: 64), nonce: Array("CurveZMQHELLO---".utf8) + short)
        return ZMTPWire.command("HELLO", [1, 0] + [UInt8](repeating: 0, count: 72)
                                    + Array(transient.publicKey.rawRepresentation) + short + signature)
    }

    /// WELCOME in, INITIATE out: the cookie back, and a box of the permanent public
    /// key, the vouch (the transient key and the server's, sealed with the permanent
    /// secret key) and this socket's metadata.
    func initiate(welcome data: ByteBuffer, socketType: String) throws -> [UInt8] {
        var data = data
        guard data.readableBytes == 16 + 144, let longNonce = data.readBytes(length: 16), let box = data.readBytes(length: 144),
              let opened = helloBox.open(box, nonce: Array("WELCOME-".utf8) + longNonce) else {
            throw ZMTPProtocolError(description: "the server's WELCOME does not open with its key")
        }
        let serverTransient = Array(opened[0..<32])
        let cookie = Array(opened[32..<128])
        let session = try SecretBox(publicKey: serverTransient, secretKey: Array(transient.rawRepresentation))
        sessionBox = session
        let vouchNonce = CurveSession.randomBytes(16)
        let vouch = try SecretBox(publicKey: serverTransient, secretKey: keys.secretKey)
            .seal(Array(transient.publicKey.rawRepresentation) + keys.serverKey, nonce: Array("VOUCH---".utf8) + vouchNonce)
        let short = nextNonce()
        let sealed = session.seal(keys.publicKey + vouchNonce + vouch + ZMTPWire.properties([("Socket-Type", socketType)]),
                                  nonce: Array("CurveZMQINITIATE".utf8) + short)
        return ZMTPWire.command("INITIATE", cookie + short + sealed)
    }

    /// The server's READY: its metadata, which must open.
    func ready(_ data: ByteBuffer) throws {
        var data = data
        guard let sessionBox, let short = data.readBytes(length: 8), let box = data.readBytes(length: data.readableBytes),
              sessionBox.open(box, nonce: Array("CurveZMQREADY---".utf8) + short) != nil else {
            throw ZMTPProtocolError(description: "the server's READY does not open")
        }
        session = CurveSession(box: sessionBox, sendPrefix: Array("CurveZMQMESSAGEC".utf8),
                               receivePrefix: Array("CurveZMQMESSAGES".utf8), nonce: nonce, peerNonce: CurveSession.uint64(short))
    }
}
