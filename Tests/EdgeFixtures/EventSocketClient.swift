import Foundation
import Synchronization
import Wire

/// An app's `GET /v1/events` WebSocket, as a test drives it: RFC 6455 written out
/// over a `RawConnection`, with a thread of its own reading what the server sends.
///
/// Blocking, on purpose: tests that wait on the cooperative thread pool starve when
/// other (blocking) tests hold its few threads, so nothing here needs the pool. It
/// also sends what a well-behaved client library would not (binary, oversized or
/// unmasked frames) when a test asks.
public final class EventSocketClient: Sendable {
    private struct State {
        var received: [String] = []
        var ended = false
        var closeCode: Int?
        var closeReason = ""
        var pings = 0
        var pongs = 0
        var reading = false
    }

    private let connection: RawConnection
    private let state = Mutex(State())
    private let writing = Mutex(())
    private let answersPings: Bool

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        /// The response that refused the upgrade, if one came.
        public let refusal: HTTPReply?
    }

    /// Opens the socket; throws when the upgrade was refused (with the response) or nothing answered.
    /// A client with `answersPings: false` lets the server's pings go unanswered, as one gone silent.
    /// A client with `paused: true` reads nothing after the upgrade until `resume()`
    /// (with a small `receiveBuffer`, a reader as slow as can be).
    public init(port: Int, path: String = "/v1/events", headers: [(String, String)] = [], answersPings: Bool = true,
                source: String? = nil, paused: Bool = false, receiveBuffer: Int? = nil) throws {
        self.answersPings = answersPings
        connection = try RawConnection(port: port, source: source, timeout: 15, receiveBuffer: receiveBuffer)
        let key = Data((0..<16).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        var head = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        connection.send(head + "\r\n")
        let reply = try connection.receiveResponse()
        guard reply.status == 101, reply.header("Upgrade")?.lowercased() == "websocket" else {
            throw Failure(description: "the upgrade was refused: \(reply)", refusal: reply)
        }
        connection.setTimeout(3600)
        if !paused { resume() }
    }

    /// Starts reading what the server sends (once; a client not paused reads from the start).
    public func resume() {
        guard state.withLock({ state in
            defer { state.reading = true }
            return !state.reading
        }) else { return }
        Thread.detachNewThread { [self] in read() }
    }

    deinit {
        connection.shutdown()
    }

    // MARK: Sending

    public enum Opcode: UInt8, Sendable {
        case continuation = 0, text = 1, binary = 2, close = 8, ping = 9, pong = 10
    }

    /// Sends one frame, masked as a client's must be (unless `masked` is false, which a server must refuse);
    /// `fin: false` for a fragment that more of its message follows.
    @discardableResult
    public func sendFrame(_ opcode: Opcode, _ payload: Data, masked: Bool = true, fin: Bool = true) -> Bool {
        let frame = Self.frame(opcode, payload, masked: masked, fin: fin)
        return writing.withLock { _ in connection.send(frame) }
    }

    /// Sends text messages all in one write, so that the server reads them together.
    @discardableResult
    public func sendAtOnce(_ texts: [String]) -> Bool {
        let frames = texts.reduce(into: Data()) { $0.append(Self.frame(.text, Data($1.utf8))) }
        return writing.withLock { _ in connection.send(frames) }
    }

    /// `{"type":"auth","token":…}`.
    public static func authMessage(_ token: String) -> String {
        String(decoding: JSONWriter.data(.object(["type": .string("auth"), "token": .string(token)])), as: UTF8.self)
    }

    /// One frame's bytes.
    static func frame(_ opcode: Opcode, _ payload: Data, masked: Bool = true, fin: Bool = true) -> Data {
        var frame = Data([(fin ? 0x80 : 0) | opcode.rawValue])
        let maskBit: UInt8 = masked ? 0x80 : 0
        switch payload.count {
        case ..<126: frame.append(maskBit | UInt8(payload.count))
        case ..<65_536:
            frame.append(maskBit | 126)
            frame.append(contentsOf: [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)])
        default:
            frame.append(maskBit | 127)
            frame.append(contentsOf: (0..<8).reversed().map { UInt8((UInt64(payload.count) >> (UInt64($0) * 8)) & 0xFF) })
        }
        if masked {
            let mask = (0..<4).map { _ in UInt8.random(in: 0...255) }
            frame.append(contentsOf: mask)
            frame.append(contentsOf: payload.enumerated().map { $0.element ^ mask[$0.offset % 4] })
        } else {
            frame.append(payload)
        }
        return frame
    }

    /// Sends a text message.
    @discardableResult
    public func send(_ text: String) -> Bool { sendFrame(.text, Data(text.utf8)) }

    /// Sends `{"type":"auth","token":…}`.
    public func authenticate(_ token: String) {
        send(Self.authMessage(token))
    }

    /// Closes from the client's side (normal closure) and waits for the server's answer.
    public func close() {
        sendFrame(.close, Data([0x03, 0xE8]))
        _ = closed(within: 5)
        connection.shutdown()
    }

    // MARK: Receiving

    /// The next message the server sent, as a JSON object: nil when none came within
    /// `timeout` seconds (or the socket ended first).
    public func next(timeout: TimeInterval = 10) -> JSONObject? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let (text, ended) = state.withLock { state -> (String?, Bool) in
                state.received.isEmpty ? (nil, state.ended) : (state.received.removeFirst(), state.ended)
            }
            if let text { return (try? JSONParser.parse(Data(text.utf8)))?.objectValue ?? ["unparsed": .string(text)] }
            if ended { return nil }
            Thread.sleep(forTimeInterval: 0.002)
        }
        return nil
    }

    /// The next message of `type`, skipping others; nil when none came within `timeout` seconds.
    public func next(ofType type: String, timeout: TimeInterval = 10) -> JSONObject? {
        let deadline = Date().addingTimeInterval(timeout)
        while case let left = deadline.timeIntervalSinceNow, left > 0 {
            guard let message = next(timeout: left) else { return nil }
            if message["type"]?.stringValue == type { return message }
        }
        return nil
    }

    /// The close code and reason the server sent, once it has within `timeout`
    /// seconds; nil while the socket is open (or it ended without a close frame).
    public func closed(within timeout: TimeInterval = 10) -> (code: Int, reason: String)? {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let (ended, code, reason) = state.withLock { ($0.ended, $0.closeCode, $0.closeReason) }
            if let code { return (code, reason) }
            if ended { return nil }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return nil
    }

    /// The pings the server has sent.
    public var pings: Int { state.withLock { $0.pings } }

    /// The pongs the server has sent (answers to this client's pings).
    public var pongs: Int { state.withLock { $0.pongs } }

    /// True once the socket has ended (closed by either side).
    public var hasEnded: Bool { state.withLock { $0.ended } }

    /// Reads frames until the connection ends: text messages are kept, pings
    /// answered, a close frame recorded and answered.
    private func read() {
        var buffer = Data()
        var message = Data()
        func need(_ count: Int) -> Bool {
            while buffer.count < count {
                guard let more = connection.receiveSome() else { return false }
                buffer.append(more)
            }
            return true
        }
        func take(_ count: Int) -> Data {
            defer { buffer.removeFirst(count) }
            return Data(buffer.prefix(count))
        }
        reading: while need(2) {
            let header = take(2)
            let final = header[0] & 0x80 != 0, opcode = header[0] & 0x0F
            var length = Int(header[1] & 0x7F)
            if length == 126 {
                guard need(2) else { break }
                length = take(2).reduce(0) { $0 << 8 | Int($1) }
            } else if length == 127 {
                guard need(8) else { break }
                length = take(8).reduce(0) { $0 << 8 | Int($1) }
            }
            guard need(length) else { break }
            let payload = take(length)
            switch opcode {
            case 0, 1, 2:
                message.append(payload)
                if final {
                    if opcode != 2 { state.withLock { $0.received.append(String(decoding: message, as: UTF8.self)) } }
                    message = Data()
                }
            case 8:
                let code = payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 1005
                let reason = payload.count > 2 ? String(decoding: payload.dropFirst(2), as: UTF8.self) : ""
                state.withLock { $0.closeCode = code; $0.closeReason = reason }
                sendFrame(.close, payload.prefix(2))
                break reading
            case 9:
                state.withLock { $0.pings += 1 }
                if answersPings { sendFrame(.pong, payload) }
            case 10:
                state.withLock { $0.pongs += 1 }
            default:
                break
            }
        }
        state.withLock { $0.ended = true }
    }
}
