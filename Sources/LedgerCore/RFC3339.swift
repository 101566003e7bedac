import Foundation
import LedgerFormats

/// RFC 3339 UTC times with milliseconds ("2026-11-21T08:00:00.123Z"), the one time format of the
/// API and the exports (written by `UTCTimestamp`: see there why by hand).
package enum RFC3339 {
    package static func string(_ date: Date) -> String {
        UTCTimestamp.text(ticks: Int64((date.timeIntervalSince1970 * 1000).rounded(.down)), fractionDigits: 3)
    }

    /// Microseconds, PostgreSQL's precision ("2026-11-21T08:00:00.123456Z"): for `known_at`, which
    /// is compared with the instants facts were recorded at, so it must not round a fact in or out.
    package static func microseconds(_ date: Date) -> String {
        UTCTimestamp.text(ticks: Int64((date.timeIntervalSince1970 * 1_000_000).rounded(.down)), fractionDigits: 6)
    }

    /// An instant as people write it in a query or on a command line: RFC 3339, or a plain date
    /// (`2026-10-01`), which means that day's midnight UTC — the month-end close finance types.
    package static func parseInstant(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return parse(text) }
        return parse(text + "T00:00:00Z") // nil for 2026-02-30: the reader refuses days that do not exist
    }

    /// Accepts RFC 3339 with or without fractional seconds, with any offset, to the microsecond
    /// (`UTCTimestamp`: Foundation's parser keeps milliseconds, and `known_at` needs more).
    package static func parse(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { UTCTimestamp.microseconds(parsing: $0, requiringZone: true) }
            .map { Date(timeIntervalSince1970: Double($0) / 1_000_000) }
    }
}
