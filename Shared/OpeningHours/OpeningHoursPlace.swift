import Foundation

/// Where a venue is, for what its hours leave to the place: when the sun rises and
/// sets there, and which days are its public and school holidays.
public struct OpeningHoursPlace: Sendable, Hashable {
    public var latitude: Double?
    public var longitude: Double?
    /// ISO 3166-1 alpha-2 (`DE`).
    public var country: String?
    /// ISO 3166-2's part after the country (`BW` of `DE-BW`), for holidays that differ by region.
    public var subdivision: String?

    public init(latitude: Double? = nil, longitude: Double? = nil, country: String? = nil, subdivision: String? = nil) {
        self.latitude = latitude
        self.longitude = longitude
        self.country = country
        self.subdivision = subdivision
    }

    public static let unknown = OpeningHoursPlace()
}

extension OpeningHoursPlace {
    /// The holiday table's subdivision for a GeoNames first-level division
    /// (`admin1`): its ISO 3166-2 code where the two differ (German states are
    /// numbered in GeoNames), the code itself where they agree (CH, GB, US); nil for
    /// the countries whose holidays the table keeps by country only.
    public static func holidaySubdivision(country: String, geoNamesAdmin1 code: String) -> String? {
        switch country.uppercased() {
        case "DE":
            let states = ["01": "BW", "02": "BY", "03": "HB", "04": "HH", "05": "HE", "06": "NI", "07": "NW", "08": "RP",
                          "09": "SL", "10": "SH", "11": "BB", "12": "MV", "13": "SN", "14": "ST", "15": "TH", "16": "BE"]
            return states[code]
        case "AT":
            // Austria's states are 01-09 in GeoNames and 1-9 in ISO 3166-2.
            guard let number = Int(code), (1...9).contains(number) else { return nil }
            return String(number)
        case "CH", "GB", "US":
            return code
        default:
            return nil
        }
    }
}
