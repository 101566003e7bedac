import Foundation
import Hummingbird
import LedgerCore

extension Request {
    /// The instant a query parameter names — RFC 3339, or a plain date meaning that day's midnight
    /// UTC — or nil when it is absent; `invalid_time` (400) when it is no instant. One reading for
    /// `at`, `known_at`, and an export's `from` and `to`.
    func instant(_ name: String) throws -> Date? {
        guard let text = uri.queryParameters[Substring(name)] else { return nil }
        guard let date = RFC3339.parseInstant(String(text)) else {
            throw LedgerError(
                .invalidTime, "\(name) must be an RFC 3339 time or a date, e.g. 2026-01-31T23:59:59Z or 2026-01-31 (midnight UTC)")
        }
        return date
    }

    /// `known_at`: an instant not in the future (nothing recorded later can be known yet, so a
    /// future one is a typo, not a question), a second's leeway for clocks.
    func knownAt() throws -> Date? {
        let knownAt = try instant("known_at")
        if let knownAt, knownAt > Date().addingTimeInterval(1) {
            throw LedgerError(.invalidTime, "known_at is in the future: the ledger cannot know yet what will be recorded")
        }
        return knownAt
    }
}

extension Wire {
    /// A body's instant field read as RFC 3339 (or a plain date, midnight UTC), nil when absent;
    /// one that does not parse is refused with `code`, the field named.
    static func instant(_ text: String?, field: String, refusedAs code: LedgerError.Code) throws -> Date? {
        guard let text else { return nil }
        guard let instant = RFC3339.parseInstant(text) else {
            throw LedgerError(code, "\(field) is an RFC 3339 time, e.g. 2026-12-06T23:59:59Z")
        }
        return instant
    }
}
