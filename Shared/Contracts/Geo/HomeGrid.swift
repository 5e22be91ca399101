import Foundation

/// The grid discoverable homes are snapped to before they leave auth: cells about
/// one distance band (500 m) on a side, each home replaced by its cell's centre.
///
/// `geo.users.near` shows distances in bands, but a filter or an order on the exact
/// distance to an exact home still answers "closer than r?" to the metre, and three
/// centres then trilaterate the home. With every home a cell centre, any number of
/// queries can find no more than the cell: all homes in one cell look the same.
///
/// Rows are a band tall; each row is split into as many equal cells as fit a band
/// wide at the row's middle, so cells keep their size towards the poles and every
/// row still wraps evenly at 180°.
public enum HomeGrid {
    /// The cell side in metres.
    public static let cellSize = GeoRules.userDistanceBand
    private static let rowDegrees = cellSize / GeoRules.earthRadius * 180 / .pi
    private static let rowCount = Int((180 / rowDegrees).rounded(.up))

    /// The centre of the cell holding the point.
    public static func snap(lat: Double, lon: Double) -> (lat: Double, lon: Double) {
        let row = min(rowCount - 1, max(0, Int(((lat + 90) / rowDegrees).rounded(.down))))
        let rowLat = min(90, -90 + (Double(row) + 0.5) * rowDegrees)
        let cells = max(1, Int((360 * cos(rowLat * .pi / 180) / rowDegrees).rounded(.down)))
        let cellDegrees = 360 / Double(cells)
        let cell = Int(((lon + 180) / cellDegrees).rounded(.down)) % cells
        return (rowLat, -180 + (Double(cell) + 0.5) * cellDegrees)
    }
}
