import Foundation

/// Dawn, sunrise, sunset and dusk at a point on a day: SunCalc's formulas (the ones the
/// reference implementation uses), so both agree to the minute.
enum SunTimes {
    private static let radians = Double.pi / 180
    private static let obliquity = radians * 23.4397
    private static let julian1970 = 2_440_588.0, julian2000 = 2_451_545.0
    private static let julianTransitOffset = 0.0009

    /// The instant (seconds since 1970, UTC) of `event` on the solar day nearest to
    /// `near`; nil where the sun does not reach the event's height that day (polar day
    /// or night).
    static func instant(of event: SunEvent, latitude: Double, longitude: Double, near: Int64) -> Int64? {
        let longitudeWest = radians * -longitude
        let phi = radians * latitude
        let days = Double(near) / 86_400 - 0.5 + julian1970 - julian2000
        let cycle = (days - julianTransitOffset - longitudeWest / (2 * Double.pi)).rounded()
        let approximateTransit = julianTransitOffset + longitudeWest / (2 * Double.pi) + cycle
        let meanAnomaly = radians * (357.5291 + 0.985_600_28 * approximateTransit)
        let center = radians * (1.9148 * sin(meanAnomaly) + 0.02 * sin(2 * meanAnomaly) + 0.0003 * sin(3 * meanAnomaly))
        let eclipticLongitude = meanAnomaly + center + radians * 102.9372 + Double.pi
        let declination = asin(sin(obliquity) * sin(eclipticLongitude))
        let noon = julian2000 + approximateTransit + 0.0053 * sin(meanAnomaly) - 0.0069 * sin(2 * eclipticLongitude)

        let height = radians * (event == .sunrise || event == .sunset ? -0.833 : -6)
        let cosine = (sin(height) - sin(phi) * sin(declination)) / (cos(phi) * cos(declination))
        guard cosine >= -1, cosine <= 1 else { return nil }
        let hourAngle = acos(cosine)
        let setTransit = julianTransitOffset + (hourAngle + longitudeWest) / (2 * Double.pi) + cycle
        let set = julian2000 + setTransit + 0.0053 * sin(meanAnomaly) - 0.0069 * sin(2 * eclipticLongitude)
        let julian = (event == .sunset || event == .dusk) ? set : noon - (set - noon)
        let seconds = (julian + 0.5 - julian1970) * 86_400
        guard seconds.isFinite, abs(seconds) < 1e12 else { return nil }
        return Int64(seconds.rounded(.down))
    }
}
