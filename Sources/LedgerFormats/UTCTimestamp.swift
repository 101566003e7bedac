/// Instants as UTC text, `2026-11-21T08:00:00.123Z`, and the calendar arithmetic behind them —
/// written once for the API's RFC 3339 times and PostgreSQL's `timestamptz` text.
///
/// By hand: Foundation's format styles cost tens of microseconds a call, which an export of a
/// million rows, and a rebuild reading a million events, pay a million times.
package enum UTCTimestamp {
    /// `ticks` counted since 1970-01-01T00:00:00Z in units of 10^-`fractionDigits` seconds
    /// (3: milliseconds, 6: microseconds), written with that many fractional digits.
    package static func text(ticks: Int64, fractionDigits: Int) -> String {
        var perSecond: Int64 = 1
        for _ in 0..<fractionDigits { perSecond *= 10 }
        let seconds = ticks.floorDivided(by: perSecond)
        let fraction = ticks - seconds * perSecond
        let days = seconds.floorDivided(by: 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = civil(fromDays: days)

        var bytes: [UInt8] = []
        bytes.reserveCapacity(21 + fractionDigits)
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
        digits(secondOfDay / 3600, 2); bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay / 60 % 60, 2); bytes.append(UInt8(ascii: ":"))
        digits(secondOfDay % 60, 2)
        if fractionDigits > 0 {
            bytes.append(UInt8(ascii: "."))
            digits(fraction, fractionDigits)
        }
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Reads `YYYY-MM-DD` `T` (or a space) `HH:MM:SS`, an optional fraction (digits past the sixth
    /// dropped), then `Z`, `±HH[:MM]`, or — unless `requiringZone` — nothing (UTC), as microseconds
    /// since 1970. Nil for any other shape and for dates that do not exist (2026-02-30). The one
    /// reader of both RFC 3339 in requests and PostgreSQL's `timestamptz` text.
    package static func microseconds(parsing bytes: UnsafeBufferPointer<UInt8>, requiringZone: Bool = false) -> Int64? {
        guard bytes.count >= 19 else { return nil }
        func number(_ range: Range<Int>) -> Int64? {
            guard range.upperBound <= bytes.count else { return nil }
            var value: Int64 = 0
            for index in range {
                let digit = bytes[index] &- UInt8(ascii: "0")
                guard digit < 10 else { return nil }
                value = value * 10 + Int64(digit)
            }
            return value
        }
        guard bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: " ") || bytes[10] == UInt8(ascii: "t"),
            let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 60
        else { return nil }
        var index = 19
        var micros: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var scale: Int64 = 100_000
            let start = index
            while index < bytes.count, let digit = number(index..<(index + 1)) {
                micros += digit * scale
                scale /= 10
                index += 1
            }
            guard index > start else { return nil }
        }
        var offsetSeconds: Int64 = 0
        if index < bytes.count, bytes[index] == UInt8(ascii: "Z") || bytes[index] == UInt8(ascii: "z") {
            index += 1
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            guard let hours = number((index + 1)..<(index + 3)) else { return nil }
            index += 3
            var minutes: Int64 = 0
            if index < bytes.count, bytes[index] == UInt8(ascii: ":") {
                guard let value = number((index + 1)..<(index + 3)) else { return nil }
                minutes = value
                index += 3
            }
            offsetSeconds = sign * (hours * 3600 + minutes * 60)
        } else if requiringZone {
            return nil
        }
        guard index == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        guard civil(fromDays: days) == (year, month, day) else { return nil }
        return (days * 86_400 + hour * 3600 + minute * 60 + second - offsetSeconds) * 1_000_000 + micros
    }

    /// Howard Hinnant's days-from-civil: proleptic Gregorian, no `Calendar` allocated per row.
    package static func daysFromCivil(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = y.floorDivided(by: 400)
        let yearOfEra = y - era * 400
        let shiftedMonth = (month + 9) % 12
        let dayOfYear = (153 * shiftedMonth + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The inverse: days since 1970-01-01 to (year, month, day).
    package static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = z.floorDivided(by: 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}

extension Int64 {
    /// Division rounding toward minus infinity: instants before 1970 fall on the right day.
    package func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
