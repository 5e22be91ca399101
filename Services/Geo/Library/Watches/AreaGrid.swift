import Contracts
import Foundation

/// A range of latitudes and one of longitudes, in degrees; `minLon > maxLon` crosses 180°.
struct LatLonBounds: Sendable, Equatable {
    var minLat: Double
    var maxLat: Double
    var minLon: Double
    var maxLon: Double

    /// The box around a circle: every point within `radius` metres of the centre is
    /// inside it. A circle that holds a pole spans every longitude.
    static func around(lat: Double, lon: Double, radius: Double) -> LatLonBounds {
        // A hair wider than exact, so that rounding never leaves out a point the
        // exact distance keeps: the grid only narrows down, the distance decides.
        let angle = radius / GeoRules.earthRadius * (1 + 1e-9) + 1e-12
        let degrees = angle * 180 / .pi
        let minLat = lat - degrees, maxLat = lat + degrees
        if minLat <= -90 || maxLat >= 90 || angle >= .pi / 2 {
            return LatLonBounds(minLat: max(-90, minLat), maxLat: min(90, maxLat), minLon: -180, maxLon: 180)
        }
        // The widest longitude the circle reaches, at the latitude where it touches its
        // bounding meridians.
        let ratio = sin(angle) / cos(lat * .pi / 180)
        guard ratio < 1 else { return LatLonBounds(minLat: minLat, maxLat: maxLat, minLon: -180, maxLon: 180) }
        let width = asin(ratio) * 180 / .pi
        guard width < 180 else { return LatLonBounds(minLat: minLat, maxLat: maxLat, minLon: -180, maxLon: 180) }
        var minLon = lon - width, maxLon = lon + width
        if minLon < -180 { minLon += 360 }
        if maxLon > 180 { maxLon -= 360 }
        return LatLonBounds(minLat: minLat, maxLat: maxLat, minLon: minLon, maxLon: maxLon)
    }

    /// Its longitudes as one or two ranges that do not cross 180°.
    var longitudeRanges: [ClosedRange<Double>] {
        minLon <= maxLon ? [minLon...maxLon] : [minLon...180, -180...maxLon]
    }
}

/// Areas found by a point: which watches a changed post may touch, without looking
/// at every watch.
///
/// Grids of latitude–longitude cells at four sizes (¼°, 2°, 16°, and halves of the
/// world). An area is filed in the cells its bounding box covers at the finest size
/// where that is at most `maxCells` cells: a 25 km circle in a dozen ¼° cells, a
/// circle around a pole in the two coarsest ones. A point looks in one cell per size.
struct AreaGrid<Key: Hashable & Sendable>: Sendable {
    static var cellSizes: [Double] { [0.25, 2, 16, 180] }
    static var maxCells: Int { 16 }

    private var cells: [CellKey: Set<Key>] = [:]
    private var filed: [Key: [CellKey]] = [:]

    struct CellKey: Hashable, Sendable {
        var level: UInt8
        var row: Int32
        var column: Int32
    }

    var count: Int { filed.count }

    mutating func insert(_ key: Key, bounds: LatLonBounds) {
        remove(key)
        let keys = Self.cells(of: bounds)
        for cell in keys { cells[cell, default: []].insert(key) }
        filed[key] = keys
    }

    mutating func remove(_ key: Key) {
        guard let keys = filed.removeValue(forKey: key) else { return }
        for cell in keys {
            cells[cell]?.remove(key)
            if cells[cell]?.isEmpty == true { cells[cell] = nil }
        }
    }

    /// Every area whose bounding box may hold the point (and some whose does not:
    /// the caller checks).
    func candidates(lat: Double, lon: Double, into found: inout Set<Key>) {
        for level in Self.cellSizes.indices {
            if let keys = cells[Self.cell(lat: lat, lon: lon, level: level)] { found.formUnion(keys) }
        }
    }

    private static func cells(of bounds: LatLonBounds) -> [CellKey] {
        for level in cellSizes.indices {
            let size = cellSizes[level]
            let rows = row(bounds.minLat, size)...row(bounds.maxLat, size)
            let columns = bounds.longitudeRanges.map { column($0.lowerBound, size)...column($0.upperBound, size) }
            let count = rows.count * columns.reduce(0) { $0 + $1.count }
            guard count <= maxCells || level == cellSizes.count - 1 else { continue }
            return rows.flatMap { row in
                columns.flatMap { $0.map { CellKey(level: UInt8(level), row: row, column: $0) } }
            }
        }
        return []
    }

    private static func cell(lat: Double, lon: Double, level: Int) -> CellKey {
        let size = cellSizes[level]
        return CellKey(level: UInt8(level), row: row(lat, size), column: column(lon, size))
    }

    /// Latitude 90 and longitude 180 belong to the last row and column.
    private static func row(_ lat: Double, _ size: Double) -> Int32 {
        Int32(min(((lat + 90) / size).rounded(.down), (180 / size).rounded(.up) - 1))
    }

    private static func column(_ lon: Double, _ size: Double) -> Int32 {
        Int32(min(((lon + 180) / size).rounded(.down), (360 / size).rounded(.up) - 1))
    }
}
