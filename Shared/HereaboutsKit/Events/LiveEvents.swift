import Foundation

/// What the events socket brings.
public enum LiveEvent: Sendable, Hashable {
    /// The socket is signed in: first on connecting, and again after each reconnect.
    /// Events sent while it was down are not replayed; after a reconnect, fetch what
    /// matters (e.g. `messages(in:after:)` from the last `seq` seen).
    case connected(reconnected: Bool)
    /// A message in one of the user's conversations (also the user's own, sent from
    /// another device).
    case chatMessage(Message)
    case fenceEntered(postId: String, at: Date?)
    case fenceExited(postId: String, at: Date?)
    /// An event of a type this version of HereaboutsKit does not know: its JSON.
    case other(type: String, json: Data)
}

/// The signed-in user's live events, for as long as it is iterated: one socket to
/// `/v1/events`, the token sent first and renewed before it expires, reconnected with
/// jittered backoff when it drops, and no chat message delivered twice. It ends
/// with `signed_out` when there is no session or it cannot be refreshed, and when the
/// iterating task is cancelled.
///
/// ```swift
/// for try await event in hereabouts.events() {
///     if case .chatMessage(let message) = event { show(message) }
/// }
/// ```
public struct LiveEvents: AsyncSequence, Sendable {
    public typealias Element = LiveEvent
    let hereabouts: Hereabouts

    public func makeAsyncIterator() -> AsyncThrowingStream<LiveEvent, any Error>.AsyncIterator {
        let (stream, continuation) = AsyncThrowingStream<LiveEvent, any Error>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let connection = EventConnection(hereabouts: hereabouts, continuation: continuation)
        let task = Task { await connection.run() }
        continuation.onTermination = { _ in task.cancel() }
        return stream.makeAsyncIterator()
    }
}

extension Hereabouts {
    /// The signed-in user's live events (see `LiveEvents`).
    public func events() -> LiveEvents {
        LiveEvents(hereabouts: self)
    }

    /// `ws:` or `wss:` for the base URL's `http:` or `https:`, at `/v1/events`.
    var eventsURL: URL {
        var components = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = components.path.hasSuffix("/") ? components.path + "v1/events" : components.path + "/v1/events"
        return components.url!
    }
}

/// One iteration's socket, reconnected until the iteration ends.
final class EventConnection: Sendable {
    let hereabouts: Hereabouts
    let continuation: AsyncThrowingStream<LiveEvent, any Error>.Continuation
    /// Messages sent on each socket once it is signed in (a live query's `watch`).
    let afterReady: [String]
    /// A token is renewed this long before it expires.
    static let renewalMargin: TimeInterval = 60
    /// The server closes with this for a token that is missing, wrong or expired.
    static let tokenRefused = 4401

    init(hereabouts: Hereabouts, continuation: AsyncThrowingStream<LiveEvent, any Error>.Continuation, afterReady: [String] = []) {
        self.hereabouts = hereabouts
        self.continuation = continuation
        self.afterReady = afterReady
    }

    func run() async {
        var recent = RecentKeys(capacity: 2_048)
        var failures = 0
        var connectedBefore = false
        while !Task.isCancelled {
            let socket = EventSockets.open(hereabouts.eventsURL, urlSession: hereabouts.urlSession)
            do {
                guard let token = try await hereabouts.sessions.accessToken(margin: Self.renewalMargin) else {
                    throw HereaboutsError.signedOut("live events need a session: sign in first")
                }
                let signedIn = try await session(socket, token: token, recent: &recent, connectedBefore: connectedBefore)
                if signedIn {
                    connectedBefore = true
                    failures = 0
                }
                if socket.closeCode == Self.tokenRefused {
                    // Refused although it was fresh here: the session may have ended
                    // (logged out elsewhere); a refresh tells, and ends this if so.
                    _ = try await hereabouts.sessions.refresh(replacing: token)
                }
            } catch let error as HereaboutsError where error.code == "signed_out" {
                socket.close()
                continuation.finish(throwing: error)
                return
            } catch {
                if Task.isCancelled { break }
            }
            socket.close()
            failures += 1
            try? await Task.sleep(for: .seconds(Backoff.delay(attempt: failures, first: 0.5, cap: 30)))
        }
        continuation.finish()
    }

    /// One socket from the token to its end; true when it got as far as `ready`.
    private func session(_ socket: any EventSocket, token: String, recent: inout RecentKeys,
                         connectedBefore: Bool) async throws -> Bool {
        try await socket.send(Self.authMessage(token))
        var signedIn = false
        var renewal: Task<Void, Never>?
        defer { renewal?.cancel() }
        for try await text in socket.messages {
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                  let type = object["type"] as? String else { continue }
            switch type {
            case "ready":
                if !signedIn {
                    continuation.yield(.connected(reconnected: connectedBefore))
                    for message in afterReady { try await socket.send(message) }
                }
                signedIn = true
                let expiresAt = (object["expiresAt"] as? String).flatMap(Self.date)
                renewal?.cancel()
                renewal = expiresAt.map { renew(socket, before: $0) }
            default:
                guard let event = Self.event(type: type, object: object, text: text) else { continue }
                // A live query's events are changes to a set, and the same change may
                // rightly come twice (in, out, in again): only the others are de-duplicated.
                guard type.hasPrefix("watch.") || type == "error" || recent.insert(Self.key(of: event)) else { continue }
                continuation.yield(event)
            }
        }
        return signedIn
    }

    /// Sends a fresh token shortly before `expiresAt`; the server answers `ready` again.
    private func renew(_ socket: any EventSocket, before expiresAt: Date) -> Task<Void, Never> {
        Task { [hereabouts] in
            let wait = max(1, expiresAt.timeIntervalSinceNow - Self.renewalMargin)
            guard (try? await Task.sleep(for: .seconds(wait))) != nil else { return }
            // Within the margin now, so this refreshes the session.
            guard let token = try? await hereabouts.sessions.accessToken(margin: Self.renewalMargin + 5) else { return }
            try? await socket.send(Self.authMessage(token))
        }
    }

    static func authMessage(_ token: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: ["type": "auth", "token": token], options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }

    static func event(type: String, object: [String: Any], text: String) -> LiveEvent? {
        switch type {
        case "chat.message":
            struct Envelope: Decodable { let message: Message }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            return (try? decoder.decode(Envelope.self, from: Data(text.utf8))).map { .chatMessage($0.message) }
        case "fence.entered", "fence.exited":
            guard let postId = object["postId"] as? String else { return nil }
            let at = (object["at"] as? String).flatMap(date)
            return type == "fence.entered" ? .fenceEntered(postId: postId, at: at) : .fenceExited(postId: postId, at: at)
        default:
            return .other(type: type, json: Data(text.utf8))
        }
    }

    /// What makes two deliveries the same event: a chat message's id; a fence
    /// crossing's post, direction and time.
    static func key(of event: LiveEvent) -> String {
        switch event {
        case .chatMessage(let message): "m:\(message.id)"
        case .fenceEntered(let postId, let at): "fe:\(postId):\(at?.timeIntervalSince1970 ?? 0)"
        case .fenceExited(let postId, let at): "fx:\(postId):\(at?.timeIntervalSince1970 ?? 0)"
        case .other(let type, let json): "o:\(type):\(json.hashValue)"
        case .connected: "c"
        }
    }

    static func date(_ text: String) -> Date? {
        ISO8601DateFormatter().date(from: text)
    }
}

/// The last `capacity` event keys, to drop an event delivered again.
struct RecentKeys {
    let capacity: Int
    private var keys: Set<String> = []
    private var order: [String] = []

    init(capacity: Int) {
        self.capacity = capacity
    }

    /// True when `key` is new (and remembered now).
    mutating func insert(_ key: String) -> Bool {
        guard keys.insert(key).inserted else { return false }
        order.append(key)
        if order.count > capacity {
            keys.remove(order.removeFirst())
        }
        return true
    }
}
