import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import Synchronization

/// Delivers mail to one relay over SMTP (RFC 5321), one connection per message:
/// EHLO, STARTTLS when configured, AUTH PLAIN (or LOGIN), MAIL, RCPT, DATA, QUIT.
/// Blocking: called from the mail sender's own thread, never from an event loop.
public struct SMTPTransport: MailTransport {
    public let configuration: SMTPConfiguration
    private let tls: NIOSSLContext?

    public init(configuration: SMTPConfiguration) throws {
        self.configuration = configuration
        if configuration.security == .none {
            tls = nil
        } else {
            var settings = TLSConfiguration.makeClientConfiguration()
            if let file = configuration.trustedCertificatesFile {
                settings.additionalTrustRoots = [.file(file)]
            }
            tls = try NIOSSLContext(configuration: settings)
        }
    }

    public var description: String { configuration.description }

    public func deliver(_ message: MailMessage) throws {
        for address in [message.from, message.to] where !address.isSafe {
            throw MailDeliveryError.permanent("\(address.address) cannot be written in an SMTP command")
        }
        let session = try SMTPSession.open(configuration, tls: tls)
        defer { session.close() }
        try session.transact(message)
    }
}

/// A reply: its code and its text lines.
struct SMTPReply: Sendable {
    var code: Int
    var lines: [String]

    var text: String { "\(code) \(lines.joined(separator: " "))" }
}

/// One connection to the relay, used from one thread.
final class SMTPSession {
    private let channel: any Channel
    private let replies: ReplyQueue
    private let configuration: SMTPConfiguration
    private var extensions: Set<String> = []
    private var authMechanisms: Set<String> = []

    private init(channel: any Channel, replies: ReplyQueue, configuration: SMTPConfiguration) {
        self.channel = channel
        self.replies = replies
        self.configuration = configuration
    }

    static func open(_ configuration: SMTPConfiguration, tls: NIOSSLContext?) throws -> SMTPSession {
        let replies = ReplyQueue()
        let implicit = configuration.security == .implicitTLS ? tls : nil
        let host = configuration.host
        let channel: any Channel
        do {
            channel = try ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .connectTimeout(.milliseconds(Int64(configuration.connectTimeout * 1000)))
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        if let implicit {
                            try channel.pipeline.syncOperations.addHandler(
                                NIOSSLClientHandler(context: implicit, serverHostname: SMTPSession.sniName(host)))
                        }
                        try channel.pipeline.syncOperations.addHandler(SMTPReplyDecoder(replies: replies))
                    }
                }
                .connect(host: host, port: configuration.port).wait()
        } catch {
            throw MailDeliveryError.transient("cannot connect to \(host):\(configuration.port): \(error)")
        }
        let session = SMTPSession(channel: channel, replies: replies, configuration: configuration)
        do {
            try session.expect(try session.reply(), 220, "greeting")
            try session.hello()
            if configuration.security == .startTLS {
                guard session.extensions.contains("STARTTLS") else {
                    throw MailDeliveryError.transient("\(host) does not offer STARTTLS; add ?starttls=off to HEREABOUTS_SMTP_URL only for a relay on a trusted network")
                }
                try session.expect(try session.command("STARTTLS"), 220, "STARTTLS")
                guard let tls else { throw MailDeliveryError.permanent("no TLS context") }
                try channel.eventLoop.submit {
                    try channel.pipeline.syncOperations.addHandler(
                        NIOSSLClientHandler(context: tls, serverHostname: SMTPSession.sniName(host)), position: .first)
                }.wait()
                try session.hello()
            }
            if let user = configuration.username, let password = configuration.password {
                try session.authenticate(user: user, password: password)
            }
        } catch {
            session.close()
            throw error
        }
        return session
    }

    /// One message: envelope, then content.
    func transact(_ message: MailMessage) throws {
        let utf8 = !message.to.address.allSatisfy(\.isASCII) || !message.from.address.allSatisfy(\.isASCII)
        if utf8 && !extensions.contains("SMTPUTF8") {
            throw MailDeliveryError.permanent("\(message.to.address) needs SMTPUTF8, which \(configuration.host) does not offer")
        }
        try expect(try command("MAIL FROM:<\(message.from.address)>\(utf8 ? " SMTPUTF8" : "")"), 250, "MAIL FROM")
        let recipient = try command("RCPT TO:<\(message.to.address)>")
        try expect(recipient, [250, 251], "RCPT TO")
        try expect(try command("DATA"), 354, "DATA")
        try write(Self.dotStuffed(message.rendered()) + Data(".\r\n".utf8))
        try expect(try reply(), 250, "the message")
        // The message is accepted; a QUIT that goes wrong changes nothing.
        _ = try? command("QUIT")
    }

    func close() {
        channel.close(promise: nil)
    }

    // MARK: Steps

    private func hello() throws {
        let reply = try command("EHLO \(configuration.clientName)")
        try expect(reply, 250, "EHLO")
        extensions = []
        authMechanisms = []
        for line in reply.lines.dropFirst() {
            let words = line.uppercased().split(separator: " ").map(String.init)
            guard let keyword = words.first else { continue }
            extensions.insert(keyword)
            if keyword == "AUTH" { authMechanisms.formUnion(words.dropFirst()) }
        }
    }

    private func authenticate(user: String, password: String) throws {
        guard channel.isActive else { throw MailDeliveryError.transient("the connection closed") }
        if authMechanisms.contains("PLAIN") || !authMechanisms.contains("LOGIN") {
            let credentials = Data("\u{0}\(user)\u{0}\(password)".utf8).base64EncodedString()
            try expect(try command("AUTH PLAIN \(credentials)"), 235, "AUTH")
        } else {
            try expect(try command("AUTH LOGIN"), 334, "AUTH LOGIN")
            try expect(try command(Data(user.utf8).base64EncodedString()), 334, "AUTH LOGIN")
            try expect(try command(Data(password.utf8).base64EncodedString()), 235, "AUTH")
        }
    }

    // MARK: Wire

    private func command(_ line: String) throws -> SMTPReply {
        try write(Data((line + "\r\n").utf8))
        return try reply()
    }

    private func write(_ data: Data) throws {
        var buffer = channel.allocator.buffer(capacity: data.count)
        buffer.writeBytes(data)
        do {
            try channel.writeAndFlush(buffer).wait()
        } catch {
            throw MailDeliveryError.transient("the connection to \(configuration.host) broke: \(error)")
        }
    }

    private func reply() throws -> SMTPReply {
        switch replies.next(timeout: configuration.replyTimeout) {
        case .some(.success(let reply)): return reply
        case .some(.failure(let error)): throw error
        case .none: throw MailDeliveryError.transient("\(configuration.host) did not answer within \(Int(configuration.replyTimeout)) s")
        }
    }

    private func expect(_ reply: SMTPReply, _ code: Int, _ step: String) throws {
        try expect(reply, [code], step)
    }

    /// 4xx: try again later; 5xx (and anything else unexpected): never.
    private func expect(_ reply: SMTPReply, _ codes: [Int], _ step: String) throws {
        guard !codes.contains(reply.code) else { return }
        let reason = "\(configuration.host) refused \(step): \(reply.text)"
        throw (400..<500).contains(reply.code) ? MailDeliveryError.transient(reason) : MailDeliveryError.permanent(reason)
    }

    /// SMTP ends DATA with a line holding one dot; a line of the message that starts
    /// with a dot gets another (RFC 5321, 4.5.2). The message ends with CRLF.
    static func dotStuffed(_ message: Data) -> Data {
        var out = Data(capacity: message.count + 16)
        var lineStart = true
        for byte in message {
            if lineStart && byte == UInt8(ascii: ".") { out.append(UInt8(ascii: ".")) }
            out.append(byte)
            lineStart = byte == 10
        }
        if !out.isEmpty && out.last != 10 { out.append(contentsOf: [13, 10]) }
        return out
    }

    /// TLS's server name: a host name, never an address literal (RFC 6066).
    static func sniName(_ host: String) -> String? {
        host.contains(":") || host.split(separator: ".").allSatisfy({ Int($0) != nil }) ? nil : host
    }
}

/// Replies as they arrive, for the session's thread to take in order.
final class ReplyQueue: Sendable {
    private let state = Mutex<(replies: [Result<SMTPReply, MailDeliveryError>], waiting: Bool)>(([], false))
    private let condition = NSCondition()

    func put(_ reply: Result<SMTPReply, MailDeliveryError>) {
        condition.lock()
        state.withLock { $0.replies.append(reply) }
        condition.broadcast()
        condition.unlock()
    }

    /// The next reply, or nil after `timeout` seconds.
    func next(timeout: TimeInterval) -> Result<SMTPReply, MailDeliveryError>? {
        let deadline = Date().addingTimeInterval(timeout)
        condition.lock()
        defer { condition.unlock() }
        while true {
            // A failure stays: every later wait gets it at once.
            if let reply = state.withLock({ state -> Result<SMTPReply, MailDeliveryError>? in
                guard let first = state.replies.first else { return nil }
                if case .success = first { state.replies.removeFirst() }
                return first
            }) { return reply }
            guard condition.wait(until: deadline) || Date() < deadline else { return nil }
        }
    }
}

/// Reads reply lines (`250-…` continues, `250 …` ends) into whole replies. A reply
/// line longer than 4 KiB, or a connection that closes, ends the session.
final class SMTPReplyDecoder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let replies: ReplyQueue
    private var pending = ByteBuffer()
    private var lines: [String] = []
    private var failed = false

    init(replies: ReplyQueue) {
        self.replies = replies
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        pending.writeBuffer(&buffer)
        while let newline = pending.readableBytesView.firstIndex(of: 10) {
            let length = newline - pending.readerIndex + 1
            guard let bytes = pending.readBytes(length: length) else { break }
            let line = String(decoding: bytes.dropLast(bytes.dropLast().last == 13 ? 2 : 1), as: UTF8.self)
            take(line, context: context)
        }
        if pending.readableBytes > 4096 { fail("a reply line longer than 4 KiB", context: context) }
        pending.discardReadBytes()
    }

    private func take(_ line: String, context: ChannelHandlerContext) {
        let utf8 = Array(line.utf8)
        guard utf8.count >= 3, let code = Int(String(decoding: utf8[0..<3], as: UTF8.self)), (200...599).contains(code) else {
            return fail("a reply that is not SMTP: \(line.prefix(80))", context: context)
        }
        let text = utf8.count > 4 ? String(decoding: utf8[4...], as: UTF8.self) : ""
        lines.append(text)
        if utf8.count > 3 && utf8[3] == UInt8(ascii: "-") { return }
        replies.put(.success(SMTPReply(code: code, lines: lines)))
        lines = []
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !failed { replies.put(.failure(.transient("the relay closed the connection"))) }
        failed = true
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        fail("\(error)", context: context)
    }

    private func fail(_ reason: String, context: ChannelHandlerContext) {
        guard !failed else { return }
        failed = true
        replies.put(.failure(.transient(reason)))
        context.close(promise: nil)
    }
}
