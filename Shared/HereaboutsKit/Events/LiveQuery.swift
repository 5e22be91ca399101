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
        let (updates, output) = AsyncThrowingStream<LiveQueryUpdate, any Error>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let (events, input) = AsyncThrowingStream<LiveEvent, any Error>.makeStream(bufferingPolicy: .bufferingNewest(10_000))
        let connection = EventConnection(hereabouts: hereabouts, continuation: input, afterReady: [message])
        let socket = Task { await connection.run() }
        let translation = Task {
            var opened = false
            do {
                for try await event in events {
                    guard case .other(let type, let json) = event else { continue }
                    if let update = try Self.update(type: type, json: json, opened: &opened) { output.yield(update) }
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

    /// The update a socket message of the query brings, nil for none; its refusal, thrown.
    static func update(type: String, json: Data, opened: inout Bool) throws -> LiveQueryUpdate? {
        struct Opened: Decodable { var hits: [Hit]; var nextCursor: String?; var reset: Bool? }
        struct Changed: Decodable { var hit: Hit }
        struct Left: Decodable { var postId: String }
        struct Refused: Decodable { var code: String; var field: String?; var detail: String }
        let object = try? JSONSerialization.jsonObject(with: json) as? [String: Any]
        guard object?["id"] as? String == queryKey else { return nil }
        let decoder = JSONDecoder()
        switch type {
        case "watch.opened":
            let page = try decoder.decode(Opened.self, from: json)
            defer { opened = true }
            return .results(page.hits, nextCursor: page.nextCursor, reset: opened || page.reset == true)
        case "watch.entered": return .entered(try decoder.decode(Changed.self, from: json).hit)
        case "watch.changed": return .changed(try decoder.decode(Changed.self, from: json).hit)
        case "watch.left": return .left(postId: try decoder.decode(Left.self, from: json).postId)
        case "error", "watch.closed":
            let refused = try decoder.decode(Refused.self, from: json)
            throw HereaboutsError(code: refused.code, field: refused.field, detail: refused.detail)
        default:
            return nil
        }
    }

    /// The socket's name for the query: one query per socket, so one name does.
    static let queryKey = "q"

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
        switch origin {
        case .coordinate(let latitude, let longitude):
            search["lat"] = latitude
            search["lon"] = longitude
        case .place(let name):
            search["place"] = name
        }
        Self.addFilters(to: &search, query: query, kinds: kinds, tags: tags, openNow: openNow, pageSize: pageSize)
        return LiveQuery(hereabouts: self, message: LiveQuery.message("search", search))
    }

    /// A live query over a box of latitudes and longitudes (a map's visible region;
    /// `minLongitude > maxLongitude` crosses 180°).
    public func watch(minLatitude: Double, minLongitude: Double, maxLatitude: Double, maxLongitude: Double, query: String? = nil,
                      kinds: [String] = [], tags: [String] = [], openNow: Bool = false, pageSize: Int? = nil) -> LiveQuery {
        var within: [String: Any] = ["minLat": minLatitude, "minLon": minLongitude, "maxLat": maxLatitude, "maxLon": maxLongitude]
        Self.addFilters(to: &within, query: query, kinds: kinds, tags: tags, openNow: openNow, pageSize: pageSize)
        return LiveQuery(hereabouts: self, message: LiveQuery.message("within", within))
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
