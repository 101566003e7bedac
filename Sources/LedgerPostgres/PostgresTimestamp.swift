import Foundation

/// `timestamptz` text in both directions. Every connection runs with `TimeZone=UTC` and
/// `DateStyle=ISO` (see `PostgresConnection.connect`), so the server prints
/// `2026-11-21 05:32:10.123456+00` and this needs no general-purpose date parser.
public enum PostgresTimestamp {
    public static func format(_ date: Date) -> String {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        return format(microsecondsSinceEpoch: Int64(micros))
    }

    public static func format(microsecondsSinceEpoch micros: Int64) -> String {
        let seconds = micros.floorDiv(1_000_000)
        let fraction = micros - seconds * 1_000_000
        let days = seconds.floorDiv(86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)
        func pad(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay % 3600 / 60, 2)):\(pad(secondOfDay % 60, 2)).\(pad(fraction, 6))Z"
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.ffffff]+00` (also with `T` and `Z`). Nil when not in that shape.
    public static func parse(_ text: String) -> Date? {
        parseMicroseconds(text).map { Date(timeIntervalSince1970: Double($0) / 1_000_000) }
    }

    public static func parseMicroseconds(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { parseMicroseconds(bytes: $0) }
    }

    static func parseMicroseconds(bytes: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard bytes.count >= 19 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            var value: Int64 = 0
            for index in range {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19)
        else { return nil }
        var index = 19
        var micros: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100_000
            while index < bytes.count, let digit = number(index..<(index + 1)) {
                micros += digit * scale
                scale /= 10
                index += 1
            }
        }
        var offsetSeconds: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard index + 3 <= bytes.count, let hours = number((index + 1)..<(index + 3)) else { return nil }
            var minutes: Int64 = 0
            if index + 6 <= bytes.count, bytes[index + 3] == UInt8(ascii: ":") {
                minutes = number((index + 4)..<(index + 6)) ?? 0
            }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds
        return seconds * 1_000_000 + micros
    }

    /// Howard Hinnant's days-from-civil: proleptic Gregorian, no Calendar allocation per row.
    static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDiv(400)
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civil(fromDays days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = z.floorDiv(146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    func floorDiv(_ divisor: Int64) -> Int64 {
        let q = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? q - 1 : q
    }
}
