import Foundation
import NIOCore

/// What ZMTP 3.1 (ZeroMQ RFC 37) puts on the wire: the greeting, commands and message
/// frames. A libzmq ROUTER cannot tell the edge's DEALER from its own, nor a libzmq
/// REQ or DEALER the services' ROUTER (`ZMTPServer`) from libzmq's.
enum ZMTPWire {
    /// The greeting's length: signature (10), version (2), mechanism (20), as-server (1), filler (31).
    static let greetingBytes = 64

    /// Frame flags.
    static let more: UInt8 = 0x01
    static let long: UInt8 = 0x02
    static let command: UInt8 = 0x04

    /// This side's greeting: ZMTP 3.1 (so the peer's heartbeats come as PING
    /// commands), the security mechanism (NULL or CURVE), as a client or a server.
    static func writeGreeting(mechanism: String, asServer: Bool = false, into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(0xFF))
        // The padding a libzmq peer reads as its identity's length plus one, for ZMTP 1.0's sake.
        buffer.writeInteger(UInt64(1))
        buffer.writeInteger(UInt8(0x7F))
        buffer.writeBytes([3, 1])
        let name = Array(mechanism.utf8.prefix(20))
        buffer.writeBytes(name + [UInt8](repeating: 0, count: 20 - name.count))
        buffer.writeInteger(UInt8(asServer ? 1 : 0))
        buffer.writeRepeatingByte(0, count: 31)
    }

    /// A command's body: its name, then its data.
    static func command(_ name: String, _ data: [UInt8] = []) -> [UInt8] {
        [UInt8(name.utf8.count)] + Array(name.utf8) + data
    }

    /// A command's name and the data after it; nil when the body has no whole name.
    static func parseCommand(_ body: ByteBuffer) -> (name: String, data: ByteBuffer)? {
        var body = body
        guard let length = body.readInteger(as: UInt8.self), let name = body.readString(length: Int(length)) else { return nil }
        return (name, body)
    }

    /// Metadata as READY and INITIATE carry it: each name (1 byte of length) and value (4 bytes).
    static func properties(_ properties: [(String, String)]) -> [UInt8] {
        var bytes: [UInt8] = []
        for (name, value) in properties {
            bytes.append(UInt8(name.utf8.count))
            bytes += name.utf8
            let count = UInt32(value.utf8.count)
            for shift in [24, 16, 8, 0] as [UInt32] { bytes.append(UInt8(truncatingIfNeeded: count >> shift)) }
            bytes += value.utf8
        }
        return bytes
    }

    /// Metadata read back: each name and value, in order; nil when the bytes do not
    /// divide into whole properties (the lengths come from the peer).
    static func parseProperties(_ bytes: some Collection<UInt8>) -> [(name: String, value: [UInt8])]? {
        var rest = Array(bytes)[...]
        var properties: [(name: String, value: [UInt8])] = []
        while let nameLength = rest.first.map(Int.init) {
            rest = rest.dropFirst()
            guard rest.count >= nameLength + 4 else { return nil }
            let name = String(decoding: rest.prefix(nameLength), as: UTF8.self)
            rest = rest.dropFirst(nameLength)
            let valueLength = rest.prefix(4).reduce(0) { $0 << 8 | Int($1) }
            rest = rest.dropFirst(4)
            guard rest.count >= valueLength else { return nil }
            properties.append((name, Array(rest.prefix(valueLength))))
            rest = rest.dropFirst(valueLength)
        }
        return properties
    }

    /// ERROR: why the handshake failed (at most 255 bytes of it).
    static func error(_ reason: String) -> [UInt8] {
        let text = Array(reason.utf8.prefix(255))
        return command("ERROR", [UInt8(text.count)] + text)
    }

    /// A message: its frames, MORE on each but the last; under CURVE each sealed in a
    /// MESSAGE of its own, MORE inside the box.
    static func message(_ frames: some Collection<Data>, sealedBy curve: (any CurveMechanism)?,
                        allocator: ByteBufferAllocator) -> ByteBuffer {
        let plainBytes = frames.reduce(0) { $0 + frameBytes($1.count) }
        var buffer = allocator.buffer(capacity: plainBytes + (curve == nil ? 0 : frames.count * 48))
        for (index, frame) in frames.enumerated() {
            let isLast = index == frames.count - 1
            if let curve {
                writeFrame(curve.seal(frame, flags: isLast ? 0 : 0x01), flags: 0, into: &buffer)
            } else {
                writeFrame(frame, flags: isLast ? 0 : more, into: &buffer)
            }
        }
        return buffer
    }

    /// The bytes `writeFrame` takes for a frame of `count` bytes.
    static func frameBytes(_ count: Int) -> Int {
        (count > 255 ? 9 : 2) + count
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
}

/// A frame from the peer once the mechanism had its say: a command, or a part of a message.
enum ZMTPFrame {
    case command(ByteBuffer)
    case part(ByteBuffer, more: Bool)

    /// What `body` carries, given its `flags`: under CURVE after the handshake every frame is a
    /// MESSAGE opened by `open`, whose flags are inside the box (MORE 1, COMMAND 2); otherwise the
    /// frame's own flags tell. A message part before the handshake ended is refused.
    static func unwrap(flags: UInt8, body: ByteBuffer, isReady: Bool,
                       open: ((ByteBuffer) throws -> (flags: UInt8, frame: [UInt8]))?) throws -> ZMTPFrame {
        if isReady, let open {
            let (inner, frame) = try open(body)
            return inner & 0x02 != 0 ? .command(ByteBuffer(bytes: frame)) : .part(ByteBuffer(bytes: frame), more: inner & 0x01 != 0)
        }
        if flags & ZMTPWire.command != 0 { return .command(body) }
        guard isReady else { throw ZMTPProtocolError(description: "a message came before the handshake ended") }
        return .part(body, more: flags & ZMTPWire.more != 0)
    }
}

/// What arrives from the peer, read by `ZMTPDecoder`.
enum ZMTPInbound: Sendable {
    /// The peer's greeting: its version and security mechanism.
    case greeting(major: UInt8, mechanism: String)
    /// One frame: its flags (MORE, COMMAND) and body.
    case frame(flags: UInt8, body: ByteBuffer)
}

/// A malformed or oversized stream from the peer: the connection is dropped.
struct ZMTPProtocolError: Error, CustomStringConvertible {
    var description: String
}

/// Reads the peer's greeting, then its frames one by one. A frame's size comes from
/// the peer's bytes, so it is checked against the limit before anything is kept for it.
struct ZMTPDecoder: ByteToMessageDecoder {
    typealias InboundOut = ZMTPInbound

    let maxFrameBytes: Int
    private var greeted = false

    init(maxFrameBytes: Int) {
        self.maxFrameBytes = maxFrameBytes
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
        let isLong = flags & ZMTPWire.long != 0
        let size: UInt64
        if isLong {
            guard let long = buffer.getInteger(at: start + 1, as: UInt64.self) else { return .needMoreData }
            size = long
        } else {
            guard let short = buffer.getInteger(at: start + 1, as: UInt8.self) else { return .needMoreData }
            size = UInt64(short)
        }
        guard size <= UInt64(maxFrameBytes) else {
            throw ZMTPProtocolError(description: "a frame from the peer is larger than \(maxFrameBytes) bytes")
        }
        let headerBytes = isLong ? 9 : 2
        let length = Int(size)
        guard buffer.readableBytes >= headerBytes + length,
              let body = buffer.getSlice(at: start + headerBytes, length: length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: headerBytes + length)
        context.fireChannelRead(wrapInboundOut(.frame(flags: flags, body: body)))
        return .continue
    }
}

/// Gathers a message's frames until the last, within the limits of one reply.
struct MessageAssembler {
    let maxFrames: Int
    let maxBytes: Int
    private var frames: [ByteBuffer] = []
    private var bytes = 0
    private var truncated = false

    init(maxFrames: Int, maxBytes: Int) {
        self.maxFrames = maxFrames
        self.maxBytes = maxBytes
    }

    /// The whole message once its last frame is in.
    mutating func add(_ frame: ByteBuffer, more: Bool) throws -> [ByteBuffer]? {
        guard frames.count < maxFrames, frame.readableBytes <= maxBytes - bytes else {
            throw ZMTPProtocolError(description: "a message from the peer is over \(maxFrames) frames or \(maxBytes) bytes")
        }
        frames.append(frame)
        bytes += frame.readableBytes
        guard !more else { return nil }
        defer {
            frames = []
            bytes = 0
        }
        return frames
    }

    /// The whole message once its last frame is in, as a ROUTER takes a request: what
    /// is past the limits is dropped unread, and the message marked truncated.
    mutating func addKeepingWithin(_ frame: ByteBuffer, more: Bool) -> (frames: [ByteBuffer], truncated: Bool)? {
        if !truncated, frames.count < maxFrames, frame.readableBytes <= maxBytes - bytes {
            frames.append(frame)
            bytes += frame.readableBytes
        } else {
            truncated = true
        }
        guard !more else { return nil }
        defer {
            frames = []
            bytes = 0
            truncated = false
        }
        return (frames, truncated)
    }
}
