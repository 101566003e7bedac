import Foundation

/// RFC 3339 UTC times with milliseconds ("2026-11-21T08:00:00.123Z"), the one time format of the
/// API and the exports. Written by hand: Foundation's format styles cost tens of microseconds a
/// call, which an export of a million rows pays a million times.
public enum RFC3339 {
    public static func string(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded(.down))
        var days = milliseconds / 86_400_000
        var rest = milliseconds % 86_400_000
        if rest < 0 { rest += 86_400_000; days -= 1 }
        // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm, proleptic Gregorian).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)

        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        func digits(_ value: Int64, _ count: Int) {
            var divisor: Int64 = 1
            for _ in 1..<count { divisor *= 10 }
            var value = value
            while divisor > 0 {
                bytes.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                value %= divisor
                divisor /= 10
            }
        }
        digits(year, 4); bytes.append(UInt8(ascii: "-"))
        digits(month, 2); bytes.append(UInt8(ascii: "-"))
        digits(day, 2); bytes.append(UInt8(ascii: "T"))
        digits(rest / 3_600_000, 2); bytes.append(UInt8(ascii: ":"))
        digits(rest / 60_000 % 60, 2); bytes.append(UInt8(ascii: ":"))
        digits(rest / 1000 % 60, 2); bytes.append(UInt8(ascii: "."))
        digits(rest % 1000, 3); bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// An instant as people write it in a query or on a command line: RFC 3339, or a plain date
    /// (`2026-10-01`), which means that day's midnight UTC — the month-end close finance types.
    public static func parseInstant(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return parse(text) }
        return parse(text + "T00:00:00Z").flatMap { RFC3339.string($0).hasPrefix(text) ? $0 : nil }  // 2026-02-30 is no date
    }

    /// Accepts RFC 3339 with or without fractional seconds, with any offset.
    public static func parse(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        return try? Date.ISO8601FormatStyle().parse(text)
    }
}
