import Crypto
import NIOCore

/// The client's side of CurveZMQ (ZeroMQ RFC 26), as libzmq's CURVE client speaks it:
/// HELLO with a transient key, the server's WELCOME (its transient key and a cookie),
/// INITIATE vouching for the transient key with the permanent one, the server's READY;
/// then every frame sealed in a MESSAGE of its own, the frame's MORE and COMMAND flags
/// inside the box. Nonces count up from 1 on each side, and each side refuses one that
/// does not.
final class CurveClient {
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
    private var session: SecretBox?
    private var nonce: UInt64 = 1
    private var peerNonce: UInt64 = 0

    init(keys: Keys) throws {
        self.keys = keys
        helloBox = try SecretBox(publicKey: keys.serverKey, secretKey: Array(transient.rawRepresentation))
    }

    private static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    private static func uint64(_ bytes: some Collection<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    private func nextNonce() -> [UInt8] {
        defer { nonce += 1 }
        return Self.bigEndian(nonce)
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
        self.session = session
        var vouchNonce = [UInt8](repeating: 0, count: 16)
        var generator = SystemRandomNumberGenerator()
        for index in vouchNonce.indices { vouchNonce[index] = UInt8.random(in: 0...255, using: &generator) }
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
        guard let session, let short = data.readBytes(length: 8), let box = data.readBytes(length: data.readableBytes),
              session.open(box, nonce: Array("CurveZMQREADY---".utf8) + short) != nil else {
            throw ZMTPProtocolError(description: "the server's READY does not open")
        }
        peerNonce = Self.uint64(short)
    }

    /// A frame sealed as a MESSAGE; `flags` are ZMTP's MORE (1) and COMMAND (2) as CurveZMQ numbers them.
    func seal(_ frame: some Collection<UInt8>, flags: UInt8) -> [UInt8] {
        let short = nextNonce()
        let sealed = session?.seal(CollectionOfOne(flags) + Array(frame), nonce: Array("CurveZMQMESSAGEC".utf8) + short) ?? []
        return ZMTPWire.command("MESSAGE", short + sealed)
    }

    /// A MESSAGE from the server, opened: the frame's flags and its bytes.
    func open(_ body: ByteBuffer) throws -> (flags: UInt8, frame: [UInt8]) {
        guard let session, let (name, data) = ZMTPWire.parseCommand(body), name == "MESSAGE" else {
            throw ZMTPProtocolError(description: "a frame from the server is not a CURVE MESSAGE")
        }
        var rest = data
        guard let short = rest.readBytes(length: 8), rest.readableBytes >= SecretBox.tagBytes + 1 else {
            throw ZMTPProtocolError(description: "a CURVE MESSAGE from the server is too short")
        }
        let number = Self.uint64(short)
        let nonce = Array("CurveZMQMESSAGES".utf8) + short
        guard number > peerNonce, let opened = rest.withUnsafeReadableBytes({ session.open($0, nonce: nonce) }) else {
            throw ZMTPProtocolError(description: "a CURVE MESSAGE from the server does not open, or repeats a nonce")
        }
        peerNonce = number
        return (opened[0], Array(opened.dropFirst()))
    }
}
