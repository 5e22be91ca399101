import Foundation
import Wire

/// Search answers as RFC 7946 GeoJSON, which MapKit's `MKGeoJSONDecoder`, Leaflet and
/// every GIS tool read as they are: a FeatureCollection with a Point feature per hit
/// (`[lon, lat]`), the hit's members as its properties and its id as the feature's.
/// The reply's other members (`nextCursor`, `center`) stay as foreign members.
enum GeoJSON {
    static let contentType = "application/geo+json"

    /// Whether an `Accept` header prefers GeoJSON to JSON, the default: GeoJSON named
    /// with a higher quality than JSON's, or named where JSON comes only from a
    /// wildcard. A client generated from the OpenAPI document lists every type its
    /// route answers (swift-openapi-generator: `application/geo+json, application/json,
    /// application/problem+json`) and gets JSON.
    static func isAccepted(_ accept: String?) -> Bool {
        guard let accept else { return false }
        var geo: Double?, json: Double?, wildcard: Double?
        for range in accept.split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
            let quality = parts.dropFirst().first { $0.hasPrefix("q=") }.flatMap { Double($0.dropFirst(2)) } ?? 1
            switch parts.first?.lowercased() {
            case contentType: geo = max(geo ?? 0, quality)
            case "application/json": json = max(json ?? 0, quality)
            case "application/*", "*/*": wildcard = max(wildcard ?? 0, quality)
            default: break
            }
        }
        guard let geo, geo > 0 else { return false }
        guard let json else { return geo >= (wildcard ?? 0) }
        return geo > json
    }

    /// A `{"hits":[…],…}` reply body as a FeatureCollection.
    static func featureCollection(_ reply: JSONObject) -> Data {
        var collection: JSONObject = ["type": .string("FeatureCollection")]
        var features: [JSONValue] = []
        if case .array(let hits)? = reply["hits"] {
            for case .object(let hit) in hits {
                var feature: JSONObject = ["type": .string("Feature")]
                if let id = hit["id"] { feature["id"] = id }
                if case .number(let lat)? = hit["lat"], case .number(let lon)? = hit["lon"] {
                    feature["geometry"] = .object(["type": .string("Point"), "coordinates": .array([.number(lon), .number(lat)])])
                } else {
                    feature["geometry"] = .null
                }
                feature["properties"] = .object(hit)
                features.append(.object(feature))
            }
        }
        collection["features"] = .array(features)
        for (key, value) in reply where key != "hits" { collection[key] = value }
        return JSONWriter.data(.object(collection))
    }
}
