import Foundation

/// What a live query brings: its results, then each change to them.
public enum LiveQueryUpdate: Sendable, Hashable {
    /// The first page of results. It comes again, with `reset`, after the socket
    /// reconnected or the server had to open the query anew: replace what you hold.
    case results([Hit], nextCursor: String?, reset: Bool)
    /// A post matches now (new, moved in, edited to match, opened).
    case entered(Hit)
    /// A post that matched still does, and its hit changed (title, place, rating…).
    case changed(Hit)
    /// A post no longer matches (moved out, edited, deleted).
    case left(postId: String)
}

/// A search that stays open: the results now, then what enters, changes in and
/// leaves them as it happens, over the events socket, for as long as it is iterated.
/// It reconnects as `events()` does and then starts again with fresh `results`.
///
/// ```swift
/// var pins: [String: Hit] = [:]
/// for try await update in hereabouts.watch(near: .place("Utrecht"), radius: 5_000, query: "burger") {
///     switch update {
///     case .results(let hits, _, _): pins = Dictionary(uniqueKeysWithValues: hits.map { ($0.id, $0) })
///     case .entered(let hit), .changed(let hit): pins[hit.id] = hit
///     case .left(let postId): pins[postId] = nil
///     }
/// }
/// ```
///
/// It ends with the server's error when the query is refused (`invalid_argument`
/// and its `field`, `rate_limited` past the watches a user may hold).
public struct LiveQuery: AsyncSequence, Sendable {
    public typealias Element = LiveQueryUpdate
    let hereabouts: Hereabouts
    /// The `watch` message: the query as `search` or `within`.
    let message: String

    public func makeAsyncIterator() -> AsyncThrowingStream<LiveQueryUpdate, any Error>.AsyncIterator {
        LiveSocket.updates(hereabouts, message: message, list: "hits", item: "hit", gone: "postId") { (message: LiveSocket.Message<Hit>) in
            switch message {
            case .opened(let hits, let nextCursor, let reset): .results(hits, nextCursor: nextCursor, reset: reset)
            case .entered(let hit): .entered(hit)
            case .changed(let hit): .changed(hit)
            case .left(let postId): .left(postId: postId)
            }
        }
    }
}

/// What a live query over people brings (`watchUsers(near:…)`): the users near now,
/// then who comes within reach, moves to another distance band, or goes.
public enum LiveUsersUpdate: Sendable, Hashable {
    /// The users near now, nearest band first (as `usersNear` gives them). It comes
    /// again, with `reset`, after the socket reconnected or the server had to open
    /// the query anew: replace what you hold.
    case results([NearUser], reset: Bool)
    /// A user is near now (moved their home in, became discoverable, took on the
    /// attributes asked for, or made room within `limit`).
    case entered(NearUser)
    /// A user still near is in another distance band.
    case changed(NearUser)
    /// A user is near no more (moved away, hidden, attributes changed, or pushed
    /// past `limit` by nearer ones).
    case left(userId: String)
}

/// People near a point or place that stay up to date: "divers near Zeeland" as homes
/// change. Applied in order to the first `results`, the updates keep exactly what a
/// fresh `usersNear` would give, `limit` included. Opening one counts as a search
/// for people (thirty a minute). It reconnects as `events()` does.
public struct LiveUsersQuery: AsyncSequence, Sendable {
    public typealias Element = LiveUsersUpdate
    let hereabouts: Hereabouts
    /// The `watch` message: the query as `usersNear`.
    let message: String

    public func makeAsyncIterator() -> AsyncThrowingStream<LiveUsersUpdate, any Error>.AsyncIterator {
        LiveSocket.updates(hereabouts, message: message, list: "users", item: "user", gone: "userId") { (message: LiveSocket.Message<NearUser>) in
            switch message {
            case .opened(let users, _, let reset): .results(users, reset: reset)
            case .entered(let user): .entered(user)
            case .changed(let user): .changed(user)
            case .left(let userId): .left(userId: userId)
            }
        }
    }
}

/// The socket under a live query: one connection of its own that sends the `watch`
/// message each time it is ready (so a reconnect opens the query anew) and turns
/// the query's messages into updates; the query's refusal ends it with the error.
enum LiveSocket {
    /// The socket's name for the query: one query per socket, so one name does.
    static let queryKey = "q"

    /// A message of a query, decoded: posts and people differ in their members' names only.
    enum Message<Item: Decodable & Sendable>: Sendable {
        /// `reset` also when results came before (the socket reconnected).
        case opened([Item], nextCursor: String?, reset: Bool)
        case entered(Item)
        case changed(Item)
        case left(String)
    }

    /// The updates of the query `message` opens. Its messages hold the first list in
    /// `list`, an entered or changed item in `item`, the id of one that left in `gone`;
    /// `translate` makes them the query's updates.
    static func updates<Item: Decodable & Sendable, Update: Sendable>(
        _ hereabouts: Hereabouts, message: String, list: String, item: String, gone: String,
        translate: @escaping @Sendable (Message<Item>) -> Update
    ) -> AsyncThrowingStream<Update, any Error>.AsyncIterator {
        let (updates, output) = AsyncThrowingStream<Update, any Error>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let (events, input) = AsyncThrowingStream<LiveEvent, any Error>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let connection = EventConnection(hereabouts: hereabouts, continuation: input, afterReady: [message])
        let socket = Task { await connection.run() }
        let translation = Task {
            var opened = false
            do {
                for try await event in events {
                    guard case .other(let type, let json) = event, let object = try ofQuery(type: type, json: json) else { continue }
                    func member<Value: Decodable>(_ name: String, as _: Value.Type) throws -> Value {
                        let data = try JSONSerialization.data(withJSONObject: ["value": object[name] ?? NSNull()])
                        return try JSONDecoder().decode(Member<Value>.self, from: data).value
                    }
                    let decoded: Message<Item>? = switch type {
                    case "watch.opened": .opened(try member(list, as: [Item].self), nextCursor: object["nextCursor"] as? String,
                                                 reset: opened || object["reset"] as? Bool == true)
                    case "watch.entered": .entered(try member(item, as: Item.self))
                    case "watch.changed": .changed(try member(item, as: Item.self))
                    case "watch.left": .left(try member(gone, as: String.self))
                    default: nil
                    }
                    if let decoded { output.yield(translate(decoded)) }
                    if type == "watch.opened" { opened = true }
                }
                output.finish()
            } catch {
                output.finish(throwing: error)
            }
            socket.cancel()
        }
        output.onTermination = { _ in
            socket.cancel()
            translation.cancel()
        }
        return updates.makeAsyncIterator()
    }

    /// One member of a message, to decode as the type it holds.
    private struct Member<Value: Decodable>: Decodable {
        var value: Value
    }

    /// The message's members when it is the query's, nil when not; its refusal
    /// (`error`, or `watch.closed` when the server could not open it again), thrown.
    static func ofQuery(type: String, json: Data) throws -> [String: Any]? {
        struct Refused: Decodable { var code: String; var field: String?; var detail: String }
        guard let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any], object["id"] as? String == queryKey else {
            return nil
        }
        if type == "error" || type == "watch.closed" {
            let refused = try JSONDecoder().decode(Refused.self, from: json)
            throw HereaboutsError(code: refused.code, field: refused.field, detail: refused.detail)
        }
        return object
    }

    static func message(_ member: String, _ query: [String: Any]) -> String {
        let object: [String: Any] = ["type": "watch", "id": queryKey, member: query]
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}

extension Hereabouts {
    /// A live query around a point or a named place (`geo.search`'s terms): see `LiveQuery`.
    public func watch(near origin: SearchOrigin, radius: Double, query: String? = nil, kinds: [String] = [], tags: [String] = [],
                      openNow: Bool = false, pageSize: Int? = nil) -> LiveQuery {
        var search: [String: Any] = ["radius": radius]
        add(origin, to: &search)
        Self.addFilters(to: &search, query: query, kinds: kinds, tags: tags, openNow: openNow, pageSize: pageSize)
        return LiveQuery(hereabouts: self, message: LiveSocket.message("search", search))
    }

    /// A live query over a box of latitudes and longitudes (a map's visible region;
    /// `minLongitude > maxLongitude` crosses 180°).
    public func watch(minLatitude: Double, minLongitude: Double, maxLatitude: Double, maxLongitude: Double, query: String? = nil,
                      kinds: [String] = [], tags: [String] = [], openNow: Bool = false, pageSize: Int? = nil) -> LiveQuery {
        var within: [String: Any] = ["minLat": minLatitude, "minLon": minLongitude, "maxLat": maxLatitude, "maxLon": maxLongitude]
        Self.addFilters(to: &within, query: query, kinds: kinds, tags: tags, openNow: openNow, pageSize: pageSize)
        return LiveQuery(hereabouts: self, message: LiveSocket.message("within", within))
    }

    /// People whose home is within `radius` metres of `origin`, kept up to date: see
    /// `LiveUsersQuery`. `attributes` must all match theirs (`["certification": "AOWD"]`).
    public func watchUsers(near origin: SearchOrigin, radius: Double, attributes: [String: String] = [:],
                           limit: Int? = nil) -> LiveUsersQuery {
        var near: [String: Any] = ["radius": radius]
        add(origin, to: &near)
        if !attributes.isEmpty { near["attributes"] = attributes }
        if let limit { near["limit"] = limit }
        return LiveUsersQuery(hereabouts: self, message: LiveSocket.message("usersNear", near))
    }

    /// The origin's point or place; a place is named back in the app's first language.
    private func add(_ origin: SearchOrigin, to body: inout [String: Any]) {
        switch origin {
        case .coordinate(let latitude, let longitude):
            body["lat"] = latitude
            body["lon"] = longitude
        case .place(let name):
            body["place"] = name
            if let language = languages.first { body["lang"] = language }
        }
    }

    private static func addFilters(to body: inout [String: Any], query: String?, kinds: [String], tags: [String], openNow: Bool,
                                   pageSize: Int?) {
        if let query { body["q"] = query }
        if !kinds.isEmpty { body["kinds"] = kinds }
        if !tags.isEmpty { body["tags"] = tags }
        if openNow { body["openNow"] = true }
        if let pageSize { body["limit"] = pageSize }
    }
}
