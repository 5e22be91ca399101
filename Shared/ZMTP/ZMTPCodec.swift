import NIOCore

/// What ZMTP 3.1 (ZeroMQ RFC 37) puts on the wire for a DEALER with the NULL
/// mechanism: the greeting, commands and message frames. A libzmq ROUTER on the other
/// end cannot tell such a peer from a libzmq DEALER.
enum ZMTPWire {
    /// The greeting's length: signature (10), version (2), mechanism (20), as-server (1), filler (31).
    static let greetingBytes = 64

    /// Frame flags.
    static let more: UInt8 = 0x01
    static let long: UInt8 = 0x02
    static let command: UInt8 = 0x04

    /// This side's greeting: ZMTP 3.1 (so the peer's heartbeats come as PING
    /// commands), NULL, as a client.
    static func writeGreeting(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(0xFF))
        // The padding a libzmq peer reads as its identity's length plus one, for ZMTP 1.0's sake.
        buffer.writeInteger(UInt64(1))
        buffer.writeInteger(UInt8(0x7F))
        buffer.writeBytes([3, 1])
        var mechanism = Array("NULL".utf8)
        mechanism += [UInt8](repeating: 0, count: 20 - mechanism.count)
        buffer.writeBytes(mechanism)
        buffer.writeInteger(UInt8(0))
        buffer.writeRepeatingByte(0, count: 31)
    }

    /// The NULL mechanism's READY command, saying what socket this is.
    static func writeReady(socketType: String, into buffer: inout ByteBuffer) {
        var body = ByteBuffer()
        writeShortString("READY", into: &body)
        writeShortString("Socket-Type", into: &body)
        body.writeInteger(UInt32(socketType.utf8.count))
        body.writeString(socketType)
        writeFrame(body.readableBytesView, flags: command, into: &buffer)
    }

    /// ZMTP 3.1's answer to a PING: PONG with the ping's context.
    static func writePong(context: ByteBuffer, into buffer: inout ByteBuffer) {
        var body = ByteBuffer()
        writeShortString("PONG", into: &body)
        var context = context
        body.writeBuffer(&context)
        writeFrame(body.readableBytesView, flags: command, into: &buffer)
    }

    /// A message: its frames, MORE on each but the last.
    static func writeMessage<Frame: Collection<UInt8>>(_ frames: [Frame], into buffer: inout ByteBuffer) {
        for (index, frame) in frames.enumerated() {
            writeFrame(frame, flags: index < frames.count - 1 ? more : 0, into: &buffer)
        }
    }

    /// The bytes `writeMessage` takes for `frames`.
    static func messageBytes<Frame: Collection<UInt8>>(_ frames: [Frame]) -> Int {
        frames.reduce(0) { $0 + ($1.count > 255 ? 9 : 2) + $1.count }
    }

    static func writeFrame<Frame: Collection<UInt8>>(_ frame: Frame, flags: UInt8, into buffer: inout ByteBuffer) {
        if frame.count > 255 {
            buffer.writeInteger(flags | long)
            buffer.writeInteger(UInt64(frame.count))
        } else {
            buffer.writeInteger(flags)
            buffer.writeInteger(UInt8(frame.count))
        }
        buffer.writeBytes(frame)
    }

    private static func writeShortString(_ string: String, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(string.utf8.count))
        buffer.writeString(string)
    }
}

/// What arrives from the peer, read by `ZMTPDecoder`.
enum ZMTPInbound: Sendable {
    /// The peer's greeting: its version and security mechanism.
    case greeting(major: UInt8, mechanism: String)
    /// A command (READY, PING, ERROR, …): its name and what follows the name.
    case command(name: String, body: ByteBuffer)
    /// A whole message, its frames in order.
    case message([ByteBuffer])
}

/// A malformed or oversized stream from the peer: the connection is dropped.
struct ZMTPProtocolError: Error, CustomStringConvertible {
    var description: String
}

/// Reads the peer's greeting, then its frames, gathering a message's frames until the
/// last. Sizes come from the peer's bytes, so each is checked against the limits
/// before anything is allocated for it.
struct ZMTPDecoder: ByteToMessageDecoder {
    typealias InboundOut = ZMTPInbound

    let maxFrames: Int
    let maxMessageBytes: Int
    private var greeted = false
    private var frames: [ByteBuffer] = []
    private var messageBytes = 0

    init(maxFrames: Int, maxMessageBytes: Int) {
        self.maxFrames = maxFrames
        self.maxMessageBytes = maxMessageBytes
    }

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard greeted else {
            guard let greeting = buffer.readSlice(length: ZMTPWire.greetingBytes) else { return .needMoreData }
            guard greeting.getInteger(at: greeting.readerIndex, as: UInt8.self) == 0xFF,
                  let marker = greeting.getInteger(at: greeting.readerIndex + 9, as: UInt8.self), marker & 1 == 1,
                  let major = greeting.getInteger(at: greeting.readerIndex + 10, as: UInt8.self),
                  let mechanismBytes = greeting.getBytes(at: greeting.readerIndex + 12, length: 20) else {
                throw ZMTPProtocolError(description: "the peer's greeting is not ZMTP 3")
            }
            greeted = true
            let mechanism = String(decoding: mechanismBytes.prefix { $0 != 0 }, as: UTF8.self)
            context.fireChannelRead(wrapInboundOut(.greeting(major: major, mechanism: mechanism)))
            return .continue
        }
        let start = buffer.readerIndex
        guard let flags = buffer.getInteger(at: start, as: UInt8.self) else { return .needMoreData }
        let headerBytes = flags & ZMTPWire.long != 0 ? 9 : 2
        let size: UInt64
        if flags & ZMTPWire.long != 0 {
            guard let long = buffer.getInteger(at: start + 1, as: UInt64.self) else { return .needMoreData }
            size = long
        } else {
            guard let short = buffer.getInteger(at: start + 1, as: UInt8.self) else { return .needMoreData }
            size = UInt64(short)
        }
        guard size <= UInt64(maxMessageBytes - messageBytes) else {
            throw ZMTPProtocolError(description: "a message from the peer is larger than \(maxMessageBytes) bytes")
        }
        let length = Int(size)
        guard buffer.readableBytes >= headerBytes + length,
              var body = buffer.getSlice(at: start + headerBytes, length: length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: headerBytes + length)
        if flags & ZMTPWire.command != 0 {
            guard let nameLength = body.readInteger(as: UInt8.self), let name = body.readString(length: Int(nameLength)) else {
                throw ZMTPProtocolError(description: "a command from the peer has no name")
            }
            context.fireChannelRead(wrapInboundOut(.command(name: name, body: body)))
            return .continue
        }
        guard frames.count < maxFrames else {
            throw ZMTPProtocolError(description: "a message from the peer has more than \(maxFrames) frames")
        }
        frames.append(body)
        messageBytes += length
        if flags & ZMTPWire.more == 0 {
            let message = frames
            frames = []
            messageBytes = 0
            context.fireChannelRead(wrapInboundOut(.message(message)))
        }
        return .continue
    }
}
