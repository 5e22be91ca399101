import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One WebSocket to `/v1/events`, as the live events need it: text in, text out,
/// and the code it closed with.
protocol EventSocket: Sendable {
    /// The text messages received, ending when the socket closes (with an error when
    /// it broke). Read by one task.
    var messages: AsyncThrowingStream<String, any Error> { get }
    func send(_ text: String) async throws
    /// The close code the server sent, once `messages` has ended.
    var closeCode: Int? { get }
    func close()
}

enum EventSockets {
    /// A socket to `url` (`ws:` or `wss:`): URLSessionWebSocketTask on Apple platforms;
    /// swift-websocket's client on Linux, where FoundationNetworking's task needs a
    /// libcurl built with WebSocket support, which Debian's is not.
    static func open(_ url: URL, urlSession: URLSession) -> any EventSocket {
        #if os(Linux)
        WSClientEventSocket(url: url)
        #else
        URLSessionEventSocket(url: url, urlSession: urlSession)
        #endif
    }
}

/// The `closeCode` of a socket, set by its reading task.
final class CloseCodeBox: @unchecked Sendable {
    private let lock = NSLock()
    private var code: Int?

    var value: Int? {
        get { lock.withLock { code } }
        set { lock.withLock { code = newValue } }
    }
}

/// URLSessionWebSocketTask (compiled everywhere; used on Apple platforms).
final class URLSessionEventSocket: EventSocket {
    let messages: AsyncThrowingStream<String, any Error>
    private let task: URLSessionWebSocketTask
    private let reader: Task<Void, Never>

    init(url: URL, urlSession: URLSession) {
        let task = urlSession.webSocketTask(with: url)
        task.maximumMessageSize = 1 << 20
        self.task = task
        let (messages, continuation) = AsyncThrowingStream<String, any Error>.makeStream()
        self.messages = messages
        task.resume()
        reader = Task {
            do {
                while !Task.isCancelled {
                    switch try await task.receive() {
                    case .string(let text): continuation.yield(text)
                    case .data: continue
                    @unknown default: continue
                    }
                }
                continuation.finish()
            } catch {
                // The close frame ends receiving with an error; its code is on the task.
                continuation.finish(throwing: error)
            }
        }
    }

    func send(_ text: String) async throws {
        try await task.send(.string(text))
    }

    var closeCode: Int? {
        task.closeCode == .invalid ? nil : task.closeCode.rawValue
    }

    func close() {
        reader.cancel()
        task.cancel(with: .normalClosure, reason: nil)
    }
}

#if os(Linux)
import Logging
import NIOWebSocket
import WSClient

/// swift-websocket's client (used on Linux).
final class WSClientEventSocket: EventSocket {
    let messages: AsyncThrowingStream<String, any Error>
    private let outgoing: AsyncStream<String>.Continuation
    private let code = CloseCodeBox()
    private let connection: Task<Void, Never>

    init(url: URL) {
        let (messages, incoming) = AsyncThrowingStream<String, any Error>.makeStream()
        let (outbox, outgoing) = AsyncStream<String>.makeStream()
        self.messages = messages
        self.outgoing = outgoing
        connection = Task { [code] in
            do {
                let frame = try await WebSocketClient.connect(url: url.absoluteString, logger: Logger(label: "HereaboutsKit.events")) {
                    inbound, outbound, _ in
                    // Sent in order by one task, so the token goes out before anything else.
                    let writer = Task {
                        for await text in outbox { try? await outbound.write(.text(text)) }
                    }
                    defer { writer.cancel() }
                    for try await message in inbound.messages(maxSize: 1 << 20) {
                        if case .text(let text) = message { incoming.yield(text) }
                    }
                }
                code.value = frame.map { Int(UInt16(webSocketErrorCode: $0.closeCode)) }
                incoming.finish()
            } catch {
                incoming.finish(throwing: error)
            }
        }
    }

    func send(_ text: String) async throws {
        outgoing.yield(text)
    }

    var closeCode: Int? { code.value }

    func close() {
        outgoing.finish()
        connection.cancel()
    }
}
#endif
