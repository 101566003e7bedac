import Hummingbird
import LedgerCore

extension Request {
    /// `after`: a cursor from a previous page (a position), 0 when absent.
    func cursor() throws -> Int64 {
        try uri.queryParameters["after"].map { text -> Int64 in
            guard let value = Int64(String(text)), value >= 0 else {
                throw LedgerError(.invalidCursor, "after is a cursor from a previous page")
            }
            return value
        } ?? 0
    }

    /// `limit`: 1–1000, 100 when absent.
    func pageLimit() throws -> Int {
        try uri.queryParameters["limit"].map { text -> Int in
            guard let value = Int(String(text)), (1...1000).contains(value) else { throw LedgerError(.invalidLimit, "limit is 1–1000") }
            return value
        } ?? 100
    }
}
