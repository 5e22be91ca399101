import NIOCore

/// A side of CurveZMQ (`CurveClient`, `CurveServer`): its traffic's seals once its
/// handshake made them, nil before.
protocol CurveMechanism: AnyObject {
    var session: CurveSession? { get set }
}

extension CurveMechanism {
    /// A frame sealed as a MESSAGE; `flags` are ZMTP's MORE (1) and COMMAND (2) as CurveZMQ numbers them.
    func seal(_ frame: some Collection<UInt8>, flags: UInt8) -> [UInt8] {
        session?.seal(frame, flags: flags) ?? []
    }

    /// A MESSAGE from the peer, opened: the frame's flags and its bytes.
    func open(_ body: ByteBuffer) throws -> (flags: UInt8, frame: [UInt8]) {
        guard var session else { throw ZMTPProtocolError(description: "a CURVE MESSAGE came before the handshake ended") }
        defer { self.session = session }
        return try session.open(body)
    }
}

/// Both sides of a CurveZMQ connection after its handshake (ZeroMQ RFC 26): every
/// frame sealed in a MESSAGE of its own, the frame's MORE (1) and COMMAND (2) flags
/// inside the box. Each side numbers its nonces up from 1, with its own prefix
/// (`CurveZMQMESSAGEC` from the client, `…S` from the server), and refuses a nonce
/// from the peer that does not count up.
struct CurveSession {
    /// Sealed between the two transient keys.
    let box: SecretBox
    let sendPrefix: [UInt8]
    let receivePrefix: [UInt8]
    /// The next nonce this side seals with; the handshake's commands used the first.
    var nonce: UInt64
    /// The last nonce the peer sealed with.
    var peerNonce: UInt64

    static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }

    static func uint64(_ bytes: some Collection<UInt8>) -> UInt64 {
        bytes.reduce(0) { $0 << 8 | UInt64($1) }
    }

    static func randomBytes(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) }
    }

    mutating func nextNonce() -> [UInt8] {
        defer { nonce += 1 }
        return Self.bigEndian(nonce)
    }

    /// A frame sealed as a MESSAGE.
    mutating func seal(_ frame: some Collection<UInt8>, flags: UInt8) -> [UInt8] {
        let short = nextNonce()
        let sealed = box.seal(CollectionOfOne(flags) + Array(frame), nonce: sendPrefix + short)
        return ZMTPWire.command("MESSAGE", short + sealed)
    }

    /// A MESSAGE from the peer, opened: the frame's flags and its bytes.
    mutating func open(_ body: ByteBuffer) throws -> (flags: UInt8, frame: [UInt8]) {
        guard let (name, data) = ZMTPWire.parseCommand(body), name == "MESSAGE" else {
            throw ZMTPProtocolError(description: "a frame from the peer is not a CURVE MESSAGE")
        }
        var rest = data
        guard let short = rest.readBytes(length: 8), rest.readableBytes >= SecretBox.tagBytes + 1 else {
            throw ZMTPProtocolError(description: "a CURVE MESSAGE from the peer is too short")
        }
        let number = Self.uint64(short)
        let nonce = receivePrefix + short
        let box = self.box
        guard number > peerNonce, let opened = rest.withUnsafeReadableBytes({ box.open($0, nonce: nonce) }) else {
            throw ZMTPProtocolError(description: "a CURVE MESSAGE from the peer does not open, or repeats a nonce")
        }
        peerNonce = number
        return (opened[0], Array(opened.dropFirst()))
    }
}
