import Contracts
import Foundation
import ServiceKit
import Wire

/// Geo's handlers: each checks its request and asks the index; no SQL, no IO.
struct GeoHandlers: Sendable {
    let index: PostIndex
    let users: UserIndex
    let stats: @Sendable () throws -> GeoStats

    func register(into router: inout Router) {
        // Searches read memory only: the thread that owns the socket answers them.
        router.readRaw(GeoAPI.search, lane: .front, search)
        router.readRaw(GeoAPI.nearest, lane: .front, nearest)
        router.readRaw(GeoAPI.within, lane: .front, within)
        router.read(GeoAPI.usersNear, lane: .front, usersNear)
        router.read(GeoAPI.stats) { _, _ in try stats() }
    }

    func search(_ request: SearchRequest, _ context: RequestContext) throws -> RawJSON {
        // `validate` has made sure both are there.
        let lat = request.lat ?? 0, lon = request.lon ?? 0
        let sort = request.sort ?? .distance
        let cursor = try request.cursor.map { try PageCursor(decoding: $0, sort: sort.rawValue) }
        let page = index.search(lat: lat, lon: lon, radius: request.radius, query: Self.query(request.q, request.kinds, request.tags,
                                openNow: request.openNow ?? false, at: request.at),
                                sort: sort, limit: request.limit ?? 20, after: cursor)
        var writer = Self.hitsReply(page)
        writer.appendASCII(",\"center\":{\"lat\":")
        writer.write(lat)
        writer.appendASCII(",\"lon\":")
        writer.write(lon)
        writer.appendASCII("}}")
        return RawJSON(writer.bytes)
    }

    func nearest(_ request: NearestRequest, _ context: RequestContext) throws -> RawJSON {
        let page = index.nearest(lat: request.lat, lon: request.lon, k: request.k, maxDistance: request.maxDistance,
                                 query: Self.query(request.q, request.kinds, nil, openNow: false, at: nil))
        var writer = Self.hitsReply(page)
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }

    func within(_ request: WithinRequest, _ context: RequestContext) throws -> RawJSON {
        let cursor = try request.cursor.map { try PageCursor(decoding: $0, sort: PostIndex.withinSort) }
        let page = index.within(minLat: request.minLat, minLon: request.minLon, maxLat: request.maxLat, maxLon: request.maxLon,
                                query: Self.query(request.q, request.kinds, nil, openNow: false, at: nil),
                                limit: request.limit ?? GeoRules.withinDefaultLimit, after: cursor)
        var writer = Self.hitsReply(page)
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }

    func usersNear(_ request: UsersNearRequest, _ context: RequestContext) throws -> UsersNearReply {
        let caller = try context.requireCaller().userID
        return UsersNearReply(users: users.near(lat: request.lat ?? 0, lon: request.lon ?? 0, radius: request.radius,
                                                attributes: request.attributes, excluding: caller, limit: request.limit ?? 20))
    }

    private static func query(_ q: String?, _ kinds: [String]?, _ tags: [String]?, openNow: Bool, at: Date?) -> PostQuery {
        PostQuery(kinds: kinds, q: q, tags: tags, openNow: openNow, at: at ?? Date())
    }

    /// `{"hits":[…],"nextCursor":…` — the caller adds what follows and the closing brace.
    private static func hitsReply(_ page: HitPage) -> JSONWriter {
        var writer = JSONWriter(capacity: page.hits.count + 160)
        writer.appendASCII("{\"hits\":")
        writer.writeRaw(page.hits)
        writer.appendASCII(",\"nextCursor\":")
        if let next = page.nextCursor { writer.write(next) } else { writer.appendASCII("null") }
        return writer
    }
}
