import Foundation

/// How search results are ordered.
public enum SearchOrder: String, Sendable {
    case distance, newest, title, rating
    /// Title from Z to A.
    case titleDescending = "-title"
}

extension Hereabouts {
    /// Posts within `radius` metres of `origin` matching every word of `query`, a
    /// page at a time. `openNow` keeps those whose opening hours say open (or closing
    /// soon), judged now or at `openAt` ("open at eight tonight").
    public func search(near origin: SearchOrigin, radius: Double, query: String? = nil, kinds: [String] = [],
                       tags: [String] = [], openNow: Bool? = nil, openAt: Date? = nil, order: SearchOrder? = nil,
                       pageSize: Int? = nil) -> Pages<Hit> {
        Pages { cursor in
            let reply = try await self.send {
                try await $0.search(query: Self.searchQuery(origin, radius: radius, query: query, kinds: kinds, tags: tags,
                                                            openNow: openNow, openAt: openAt, order: order, pageSize: pageSize,
                                                            cursor: cursor))
                    .ok.body.json
            }
            return Page(items: reply.hits, nextCursor: reply.nextCursor)
        }
    }

    /// The same search as GeoJSON (an RFC 7946 FeatureCollection of its first page):
    /// what MapKit's `MKGeoJSONDecoder` and web maps read as it is.
    public func searchGeoJSON(near origin: SearchOrigin, radius: Double, query: String? = nil, kinds: [String] = [],
                              openNow: Bool? = nil, pageSize: Int? = nil) async throws -> Data {
        try await send {
            let reply = try await $0.search(query: Self.searchQuery(origin, radius: radius, query: query, kinds: kinds, tags: [],
                                                                    openNow: openNow, openAt: nil, order: nil, pageSize: pageSize,
                                                                    cursor: nil),
                                            headers: .init(accept: [.init(contentType: .applicationGeoJson)]))
            return try JSONEncoder().encode(try reply.ok.body.applicationGeoJson)
        }
    }

    /// The `count` posts nearest to a point, nearest first; none farther than
    /// `maxDistance` metres when it is given.
    public func nearest(latitude: Double, longitude: Double, count: Int = 10, query: String? = nil, kinds: [String] = [],
                        maxDistance: Double? = nil) async throws -> [Hit] {
        try await send {
            try await $0.nearest(query: .init(lat: latitude, lon: longitude, k: count, q: query,
                                              kinds: kinds.isEmpty ? nil : kinds.joined(separator: ","), maxDistance: maxDistance))
                .ok.body.json.hits
        }
    }

    /// Places whose name begins with `name` in any language, most populous first
    /// (offline: the server's own gazetteer), named in the app's `languages`.
    public func places(named name: String, limit: Int? = nil) async throws -> [Place] {
        try await send { try await $0.searchPlaces(query: .init(q: name, limit: limit)).ok.body.json.places }
    }

    /// A country's facts and flag (`"NL"`), named in the app's `languages`.
    public func country(_ code: String) async throws -> Country {
        try await send { try await $0.getCountry(path: .init(code: code)).ok.body.json.country }
    }

    static func searchQuery(_ origin: SearchOrigin, radius: Double, query: String?, kinds: [String], tags: [String], openNow: Bool?,
                            openAt: Date?, order: SearchOrder?, pageSize: Int?, cursor: String?) -> Operations.Search.Input.Query {
        .init(lat: origin.latitude, lon: origin.longitude, place: origin.placeName, radius: radius, q: query,
              kinds: kinds.isEmpty ? nil : kinds.joined(separator: ","), tags: tags.isEmpty ? nil : tags.joined(separator: ","),
              openNow: openNow ?? (openAt == nil ? nil : true), at: openAt.map { $0.formatted(.iso8601) },
              sort: order.flatMap { .init(rawValue: $0.rawValue) }, limit: pageSize, cursor: cursor)
    }
}
