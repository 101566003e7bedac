import Foundation
import LedgerCore
import LedgerPostgres

/// The currency ledger finance closes a month with: per currency and UTC day, opening, issued
/// (paid, free), spent, expired, reversed, moved and closing (`CurrencyLedger`), over every user
/// of the app, each user's history read from the log as it was known at the close.
///
/// Every user is read, not only those whose stored timeline holds currency: a stored timeline may
/// predate a rule (a subscription's period granting, say) until the projection is rebuilt, and the
/// books must not. The users are read a page at a time and counted into the books as they come
/// (`CurrencyBooks`), so a close holds one page of histories however many players the app has.
package struct CurrencyExport: Sendable {
    package var bundleID: String
    package var from: Date
    package var to: Date
    /// Only what was recorded by then (nil: everything known now).
    package var knownAt: Date?

    /// A close of the days from `from`'s to the one before `to`'s: at most 366 of them, a row a
    /// currency and day.
    package init(bundleID: String, from: Date, to: Date, knownAt: Date? = nil) throws {
        guard from < to, to.timeIntervalSince(from) <= 366 * 86_400 else {
            throw LedgerError(.invalidTime, "from must be before to, and at most 366 days before it")
        }
        self.bundleID = bundleID
        self.from = from
        self.to = to
        self.knownAt = knownAt
    }

    package static let columns = [
        "currency", "day", "opening", "issued_paid", "issued_free", "spent", "expired", "reversed", "moved", "closing",
    ]

    /// Users read in one round trip: the app's own streams once for them all, their events
    /// decoded together; `ledger-bench currency-export` measured the sizes (docs/performance.md).
    package static let pageSize = 100

    package func days(on pool: PostgresPool, pageSize: Int = Self.pageSize) async throws -> [CurrencyDay] {
        var books = CurrencyBooks(from: from, to: to)
        try await Self.forEachPage(bundleID: bundleID, knownAt: knownAt, pageSize: pageSize, on: pool) { page in
            for timeline in page { books.add(timeline) }
        }
        return books.days
    }

    /// What the app's users hold of each currency at `instant`, or nil when the app has more than
    /// `limit` users (the console asks this on a page; the export is the way for more).
    package static func outstanding(bundleID: String, at instant: Date, limit: Int, on pool: PostgresPool) async throws -> [String: Int64]?
    {
        let count = try await pool.query("SELECT count(*) AS n FROM ledger.user_timelines WHERE bundle_id = $1", [bundleID])[0]["n"].int()
        guard count <= limit else { return nil }
        var held: [String: Int64] = [:]
        try await forEachPage(bundleID: bundleID, knownAt: nil, pageSize: pageSize, on: pool) { page in
            for timeline in page {
                held.merge(Wallet.replayed(timeline.balanceEntries, until: instant).balances, uniquingKeysWith: +)
            }
        }
        return held
    }

    /// Every user's timeline from the log as known at `knownAt`, `pageSize` users at a time in the
    /// order of their ids (a page starts after the last id of the one before, so a user who
    /// arrives meanwhile is read or not, never twice).
    static func forEachPage(
        bundleID: String, knownAt: Date?, pageSize: Int, on pool: PostgresPool, _ body: ([UserTimeline]) throws -> Void
    ) async throws {
        // Every user id has a character, so the first page starts after the empty one.
        var after = ""
        while true {
            let (users, timelines) = try await pool.withConnection { [after] connection in
                let users = try connection.query(
                    "SELECT user_id FROM ledger.user_timelines WHERE bundle_id = $1 AND user_id > $2 ORDER BY user_id LIMIT $3",
                    [bundleID, after, pageSize]
                ).map { UserKey(bundleID: bundleID, userID: try $0["user_id"].string()) }
                guard !users.isEmpty else { return (users, [UserTimeline]()) }
                let ledgers = try UsersProjection.userLedgers(
                    users, owners: "ledger.transaction_owners", recordedBy: knownAt, on: connection)
                return (users, users.map { (ledgers[$0] ?? AppLedger(bundleID: bundleID)).timeline(of: $0.userID) })
            }
            try body(timelines)
            guard users.count == pageSize, let last = users.last else { return }
            after = last.userID
        }
    }

    /// The figures after the currency and the day, in the columns' order.
    static func figures(_ day: CurrencyDay) -> [Int64] {
        [day.opening, day.issuedPaid, day.issuedFree, day.spent, day.expired, day.reversed, day.moved, day.closing]
    }

    static func fields(_ day: CurrencyDay) -> [String] {
        [day.currency, String(RFC3339.string(day.day).prefix(10))] + figures(day).map(String.init)
    }

    package static func csvHeader() -> String { columns.joined(separator: ",") + "\r\n" }

    /// The whole answer, as the API and `ledger export currencies` give it: CSV with its header
    /// row, or a JSON line a day.
    package static func text(_ days: [CurrencyDay], as format: FinanceExport.Format) -> String {
        var text = format == .csv ? csvHeader() : ""
        for day in days { text += format == .csv ? csvLine(day) : jsonLine(day) }
        return text
    }

    package static func csvLine(_ day: CurrencyDay) -> String { FinanceExport.csvRecord(fields(day)) }

    package static func jsonLine(_ day: CurrencyDay) -> String {
        var object: [String: Any] = ["currency": day.currency, "day": String(RFC3339.string(day.day).prefix(10))]
        for (column, value) in zip(columns.dropFirst(2), figures(day)) { object[column] = value }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
