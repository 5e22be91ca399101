import Foundation
import Wire

/// Search answers as RFC 7946 GeoJSON, which MapKit's `MKGeoJSONDecoder`, Leaflet and
/// every GIS tool read as they are: a FeatureCollection with a Point feature per hit
/// (`[lon, lat]`), the hit's members as its properties and its id as the feature's.
/// The reply's other members (`nextCursor`, `center`) stay as foreign members.
enum GeoJSON {
    static let contentType = "application/geo+json"

    /// Whether an `Accept` header asks for GeoJSON.
    static func isAccepted(_ accept: String?) -> Bool {
        guard let accept else { return false }
        return accept.split(separator: ",").contains { $0.split(separator: ";").first?.trimmingCharacters(in: .whitespaces) == contentType }
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
