// Conveniences for apps that have CoreLocation and MapKit (iOS, macOS). Linux has
// neither, so this file is compiled only where they exist.
#if canImport(CoreLocation)
import CoreLocation
import Foundation

extension SearchOrigin {
    public static func coordinate(_ coordinate: CLLocationCoordinate2D) -> SearchOrigin {
        .coordinate(latitude: coordinate.latitude, longitude: coordinate.longitude)
    }
}

extension Hit {
    public var coordinate: CLLocationCoordinate2D { CLLocationCoordinate2D(latitude: lat, longitude: lon) }
}

extension Post {
    public var coordinate: CLLocationCoordinate2D { CLLocationCoordinate2D(latitude: lat, longitude: lon) }
}

extension PostDraft {
    public init(kind: String, title: String, coordinate: CLLocationCoordinate2D) {
        self.init(kind: kind, title: title, latitude: coordinate.latitude, longitude: coordinate.longitude)
    }
}

extension FenceRegion {
    public var center: CLLocationCoordinate2D { CLLocationCoordinate2D(latitude: latitude, longitude: longitude) }

    /// The region to give `CLLocationManager.startMonitoring(for:)`; its identifier
    /// is the post's id. The system watches at most 20 regions per app.
    public var circularRegion: CLCircularRegion {
        let region = CLCircularRegion(center: center, radius: radius, identifier: postId)
        region.notifyOnEntry = true
        region.notifyOnExit = true
        return region
    }
}

extension Hereabouts {
    /// The fences worth watching around a location, as regions for `CLLocationManager`.
    public func planFences(around location: CLLocation, max: Int? = nil) async throws -> [CLCircularRegion] {
        try await planFences(latitude: location.coordinate.latitude, longitude: location.coordinate.longitude, max: max)
            .map(\.circularRegion)
    }

    /// Reports where the user is now (call it on each region crossing).
    @discardableResult
    public func updateFences(at location: CLLocation) async throws -> FenceCrossings {
        try await updateFences(latitude: location.coordinate.latitude, longitude: location.coordinate.longitude)
    }

    public func setLocation(_ coordinate: CLLocationCoordinate2D, discoverable: Bool = true) async throws {
        try await setLocation(latitude: coordinate.latitude, longitude: coordinate.longitude, discoverable: discoverable)
    }

    public func nearest(to coordinate: CLLocationCoordinate2D, count: Int = 10, query: String? = nil, kinds: [String] = [],
                        maxDistance: Double? = nil) async throws -> [Hit] {
        try await nearest(latitude: coordinate.latitude, longitude: coordinate.longitude, count: count, query: query,
                          kinds: kinds, maxDistance: maxDistance)
    }
}
#endif

#if canImport(MapKit)
import MapKit

extension Hereabouts {
    /// A search's first page as MapKit features: each one's `geometry` is an
    /// `MKPointAnnotation` to add to a map view, its `properties` the hit's fields as JSON.
    public func searchMapFeatures(near origin: SearchOrigin, radius: Double, query: String? = nil, kinds: [String] = [],
                                  openNow: Bool? = nil, pageSize: Int? = nil) async throws -> [MKGeoJSONFeature] {
        let geoJSON = try await searchGeoJSON(near: origin, radius: radius, query: query, kinds: kinds, openNow: openNow,
                                              pageSize: pageSize)
        return try MKGeoJSONDecoder().decode(geoJSON).compactMap { $0 as? MKGeoJSONFeature }
    }
}
#endif
