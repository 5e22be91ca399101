import Foundation

/// RFC 3339 instants as the protocol writes them: UTC, whole seconds,
/// `2026-11-22T10:00:00Z`. Reading accepts fractions of a second and offsets.
public enum Timestamp {
    public static func format(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970.rounded(.down))
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civilDate(fromDays: days)
        // Written by hand: String(format:) costs microseconds on every reply with a date.
        var bytes = [UInt8]()
        bytes.reserveCapacity(20)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            var value = max(0, value)
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                value %= divisor
                divisor /= 10
            }
        }
        digits(year, 4); bytes.append(UInt8(ascii: "-")); digits(month, 2); bytes.append(UInt8(ascii: "-")); digits(day, 2)
        bytes.append(UInt8(ascii: "T"))
        digits(secondOfDay / 3600, 2); bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2); bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2); bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    public static func parse(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20 else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                guard bytes[index] >= 0x30, bytes[index] <= 0x39 else { return nil }
                value = value * 10 + Int(bytes[index] - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), bytes[4] == UInt8(ascii: "-"),
              let month = number(5..<7), bytes[7] == UInt8(ascii: "-"),
              let day = number(8..<10), bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"),
              let hour = number(11..<13), bytes[13] == UInt8(ascii: ":"),
              let minute = number(14..<16), bytes[16] == UInt8(ascii: ":"),
              let second = number(17..<19)
        else { return nil }
        guard (1...12).contains(month), (1...daysInMonth(year: year, month: month)).contains(day),
              hour < 24, minute < 60, second < 61 else { return nil }
        var index = 19
        var fraction = 0.0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale = 0.1
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 {
                fraction += Double(bytes[index] - 0x30) * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        guard index < bytes.count else { return nil }
        var offsetSeconds = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == bytes.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == bytes.count, let offsetHour = number(index + 1..<index + 3),
                  bytes[index + 3] == UInt8(ascii: ":"), let offsetMinute = number(index + 4..<index + 6),
                  offsetHour < 24, offsetMinute < 60 else { return nil }
            offsetSeconds = (offsetHour * 3600 + offsetMinute * 60) * (bytes[index] == UInt8(ascii: "+") ? 1 : -1)
        default:
            return nil
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + Int64(hour * 3600 + minute * 60 + min(second, 59)) - Int64(offsetSeconds)
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
    public static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = y.floorDivided(by: 400)
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    public static func civilDate(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day))
    }

    public static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}

extension Int64 {
    /// Division rounding towards negative infinity, for dates before 1970.
    func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
