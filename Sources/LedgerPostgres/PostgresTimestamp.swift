import Foundation
import LedgerFormats

/// `timestamptz` text in both directions. Every connection runs with `TimeZone=UTC` and
/// `DateStyle=ISO` (see `PostgresConnection.connect`), so the server prints
/// `2026-11-21 05:32:10.123456+00` and this needs no general-purpose date parser.
package enum PostgresTimestamp {
    package static func format(_ date: Date) -> String {
        let micros = (date.timeIntervalSince1970 * 1_000_000).rounded()
        return format(microsecondsSinceEpoch: Int64(micros))
    }

    package static func format(microsecondsSinceEpoch micros: Int64) -> String {
        UTCTimestamp.text(ticks: micros, fractionDigits: 6)
    }

    /// Parses `YYYY-MM-DD HH:MM:SS[.ffffff]+00` (also with `T` and `Z`). Nil when not in that shape.
    package static func parse(_ text: String) -> Date? {
        parseMicroseconds(text).map { Date(timeIntervalSince1970: Double($0) / 1_000_000) }
    }

    package static func parseMicroseconds(_ text: String) -> Int64? {
        var text = text
        return text.withUTF8 { UTCTimestamp.microseconds(parsing: $0) }
    }
}
