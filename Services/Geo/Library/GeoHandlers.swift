import Contracts
import Foundation
import ServiceClient
import ServiceKit
import Wire

/// Geo's handlers: each checks its request and asks the indexes, and the store for
/// the little geo writes (who is in which fence); no SQL of their own.
struct GeoHandlers: Sendable {
    let index: PostIndex
    let users: UserIndex
    let gazetteer: Gazetteer
    let fences: FenceIndex
    let store: GeoStore
    let fenceEvents: FenceEvents
    let watches: WatchRegistry
    /// Which replica this process is: only replica 0 (`ReplicaSet.owner`) keeps who
    /// is inside which fence. A crossing is a difference from the user's last
    /// update, so updates split across replicas' files would each see a different
    /// "last" and announce the same entry twice or an exit never.
    let replica: Int
    let stats: @Sendable () throws -> GeoStats
    /// Thirty searches for people a minute per caller (bursts of 20), one-shot or
    /// watches opened: what a person looking for divers asks, and far from what
    /// mapping every home's cell would take.
    let peopleLimit = RateLimiter(policy: .init(perSecond: 0.5, burst: 20))

    func register(into router: inout Router) {
        // Searches read memory only: the thread that owns the socket answers them.
        router.readRaw(GeoAPI.search, lane: .front, search)
        router.readRaw(GeoAPI.nearest, lane: .front, nearest)
        router.readRaw(GeoAPI.within, lane: .front, within)
        router.read(GeoAPI.usersNear, lane: .front, limiter: peopleLimit, usersNear)
        // A short name prefix may match tens of thousands of keys: off the front thread.
        router.read(GeoAPI.placesSearch, placesSearch)
        router.read(GeoAPI.placesReverse, lane: .front, placesReverse)
        router.read(GeoAPI.countriesGet, lane: .front, countriesGet)
        router.write(GeoAPI.fencesUpdate, fencesUpdate)
        router.read(GeoAPI.fencesPlan, lane: .front, fencesPlan)
        router.readRaw(GeoAPI.watchOpen, watchOpen)
        router.read(GeoAPI.watchRenew) { request, context in
            WatchReply(watch: try watches.renew(request.id, owner: try context.requireCaller().userID,
                                                lease: request.lease ?? GeoRules.watchLease))
        }
        router.read(GeoAPI.watchClose) { request, context in
            try watches.close(request.id, owner: try context.requireCaller().userID)
            return Empty()
        }
        router.read(GeoAPI.stats) { _, _ in try stats() }
    }

    func search(_ request: SearchRequest, _ context: RequestContext) throws -> RawJSON {
        let center = try center(lat: request.lat, lon: request.lon, place: request.place, lang: request.lang)
        let sort = request.sort ?? .distance
        let cursor = try request.cursor.map { try PageCursor(decoding: $0, sort: sort.rawValue) }
        let page = index.search(lat: center.lat, lon: center.lon, radius: request.radius,
                                query: Self.query(request.q, request.kinds, request.tags, openNow: request.openNow ?? false,
                                                  at: request.at, highlight: request.highlight),
                                sort: sort, limit: request.limit ?? 20, after: cursor)
        var writer = Self.hitsReply(page)
        try Self.writeCenter(center, into: &writer)
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }

    /// Opens a watch (`geo.watch.open`): `{"watch":…,"hits":…,"nextCursor":…}` for
    /// posts, `{"watch":…,"users":…}` for people, with `"center"` for a circle, as
    /// the one-shot op would answer.
    func watchOpen(_ request: WatchOpenRequest, _ context: RequestContext) throws -> RawJSON {
        enum FirstPage { case hits(HitPage), users([NearUser]) }
        let owner = try context.requireCaller().userID
        let (watch, page) = try watches.open(owner: owner, requestID: context.requestID, lease: request.lease ?? GeoRules.watchLease) {
            id, expiresAt in
            let resolved = try watchCenter(request, owner: owner)
            return Watch(request, center: resolved, id: id, owner: owner, expiresAt: expiresAt)
        } firstPage: { watch -> FirstPage in
            switch watch.subject {
            case .posts(let posts):
                return .hits(index.lock.withReadLock { index.firstPage(of: posts, at: Date()) })
            case .users(var near):
                // What the owner is given is what later batches are compared with.
                near.members = users.members(of: near, owner: watch.owner)
                watch.subject = .users(near)
                return .users(near.members)
            }
        }
        var writer = JSONWriter(capacity: 512)
        writer.appendASCII("{\"watch\":")
        writer.write(try JSONValueEncoder().encode(watch.info))
        switch page {
        case .hits(let page):
            writer.appendASCII(",\"hits\":")
            writer.writeRaw(page.hits)
            writer.appendASCII(",\"nextCursor\":")
            if let next = page.nextCursor { writer.write(next) } else { writer.appendASCII("null") }
        case .users(let users):
            writer.appendASCII(",\"users\":")
            writer.write(try JSONValueEncoder().encode(users))
        }
        if let center = watch.center { try Self.writeCenter(center, into: &writer) }
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }

    /// Where a `search` or `usersNear` watch's point or place is; opening one over
    /// people counts as a search for people.
    private func watchCenter(_ request: WatchOpenRequest, owner: String) throws -> SearchReply.Center? {
        if let search = request.search {
            return try Check.member("search") { try center(lat: search.lat, lon: search.lon, place: search.place, lang: search.lang) }
        }
        guard let near = request.usersNear else { return nil }
        if let wait = peopleLimit.take(owner) {
            throw ServiceError.rateLimited("too many searches for people; slow down", retryAfterMs: Int((wait * 1000).rounded(.up)))
        }
        return try Check.member("usersNear") { try center(lat: near.lat, lon: near.lon, place: near.place, lang: near.lang) }
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
                                query: Self.query(request.q, request.kinds, request.tags, openNow: request.openNow ?? false, at: nil,
                                                  highlight: request.highlight),
                                limit: request.limit ?? GeoRules.withinDefaultLimit, after: cursor)
        var writer = Self.hitsReply(page)
        writer.appendASCII("}")
        return RawJSON(writer.bytes)
    }

    func usersNear(_ request: UsersNearRequest, _ context: RequestContext) throws -> UsersNearReply {
        let caller = try context.requireCaller().userID
        let center = try center(lat: request.lat, lon: request.lon, place: request.place, lang: request.lang)
        return UsersNearReply(users: users.near(lat: center.lat, lon: center.lon, radius: request.radius,
                                                attributes: request.attributes, excluding: caller, limit: request.limit ?? 20),
                              center: center)
    }

    func placesSearch(_ request: PlacesSearchRequest, _ context: RequestContext) throws -> PlacesReply {
        PlacesReply(places: gazetteer.search(request.q, countryCode: request.countryCode?.uppercased(),
                                             limit: request.limit ?? GeoRules.placesDefaultLimit, in: Self.language(request.lang)))
    }

    func placesReverse(_ request: PlacesReverseRequest, _ context: RequestContext) throws -> PlaceReverseReply {
        guard let (place, distance, town) = gazetteer.nearest(lat: request.lat, lon: request.lon, in: Self.language(request.lang)) else {
            throw ServiceError.notFound("the gazetteer holds no places")
        }
        return PlaceReverseReply(place: place, distance: distance, town: town)
    }

    func countriesGet(_ request: CountryRequest, _ context: RequestContext) throws -> CountryReply {
        guard let country = gazetteer.country(code: request.code, in: Self.language(request.lang)) else {
            throw ServiceError.notFound("no country with code \(request.code.uppercased())")
        }
        return CountryReply(country: country)
    }

    func fencesUpdate(_ request: FenceUpdateRequest, _ context: RequestContext) throws -> Committed<FenceUpdateReply> {
        let userId = try context.requireCaller().userID
        guard replica == ReplicaSet.owner else {
            throw ServiceError.unavailable("this is geo's replica \(replica): fence updates go to replica \(ReplicaSet.owner), which keeps who is inside which fence",
                                           detail: "the first endpoint of HEREABOUTS_GEO_ENDPOINT")
        }
        let near = fences.snapshot.near(lat: request.lat, lon: request.lon)
        let now = Date()
        // Read, compare and write in one transaction: two updates of one user never
        // both see the old state.
        return try context.commit { db in
            let crossing = FenceCrossing(wasInside: try store.fencesInside(of: userId, in: db), near: near)
            try store.recordCrossing(of: userId, crossing, at: now, in: db)
            db.afterNextTransaction { _ in
                fenceEvents.send(.entered, userId: userId, postIds: crossing.entered, at: now)
                fenceEvents.send(.exited, userId: userId, postIds: crossing.exited, at: now)
            }
            return FenceUpdateReply(entered: crossing.entered, exited: crossing.exited, inside: crossing.inside)
        }
    }

    func fencesPlan(_ request: FencePlanRequest, _ context: RequestContext) throws -> FencePlanReply {
        let nearest = fences.snapshot.nearest(lat: request.lat, lon: request.lon, count: request.max ?? GeoRules.fencePlanMax)
        return FencePlanReply(regions: nearest.map { FenceRegion(postId: $0.fence.postId, lat: $0.fence.lat, lon: $0.fence.lon,
                                                                 radius: $0.fence.radius) })
    }

    /// The centre a request gives: its `lat` and `lon` (which `validate` has made
    /// sure are both there when `place` is not), or its place's, named in `lang`.
    private func center(lat: Double?, lon: Double?, place name: String?, lang: String?) throws -> SearchReply.Center {
        guard let name else { return SearchReply.Center(lat: lat ?? 0, lon: lon ?? 0) }
        guard let place = gazetteer.resolve(name, in: Self.language(lang)) else {
            throw ServiceError(code: .notFound, message: "no place is called \"\(name)\"", field: "place")
        }
        return SearchReply.Center(lat: place.lat, lon: place.lon, place: place)
    }

    /// A request's `lang`, which its `validate` has checked; nil when absent (places
    /// keep their own names, countries are named in English).
    private static func language(_ lang: String?) -> LanguageTag? {
        lang.flatMap { LanguageTag($0) }
    }

    /// `,"center":{…}`.
    private static func writeCenter(_ center: SearchReply.Center, into writer: inout JSONWriter) throws {
        writer.appendASCII(",\"center\":{\"lat\":")
        writer.write(center.lat)
        writer.appendASCII(",\"lon\":")
        writer.write(center.lon)
        if let place = center.place {
            writer.appendASCII(",\"place\":")
            writer.write(try JSONValueEncoder().encode(place))
        }
        writer.appendASCII("}")
    }

    private static func query(_ q: String?, _ kinds: [String]?, _ tags: [String]?, openNow: Bool, at: Date?,
                              highlight: Bool? = nil) -> PostQuery {
        PostQuery(kinds: kinds, q: q, tags: tags, openNow: openNow, at: at ?? Date(), highlight: highlight ?? true)
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
