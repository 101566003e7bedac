import Foundation
import LedgerCore
import LedgerPostgres

/// The currency ledger finance closes a month with: per currency and UTC day, opening, issued
/// (paid, free), spent, expired, reversed, moved and closing (`CurrencyLedger`), over every user
/// of the app, each user's history read from the log as it was known at the close.
///
/// Every user is read, not only those whose stored timeline holds currency: a stored timeline may
/// predate a rule (a subscription's period granting, say) until the projection is rebuilt, and the
/// books must not. One read per user; `ledger-bench` has no figure for it yet.
package struct CurrencyExport: Sendable {
    package var bundleID: String
    package var from: Date
    package var to: Date
    /// Only what was recorded by then (nil: everything known now).
    package var knownAt: Date?

    package init(bundleID: String, from: Date, to: Date, knownAt: Date? = nil) {
        self.bundleID = bundleID
        self.from = from
        self.to = to
        self.knownAt = knownAt
    }

    package static let columns = [
        "currency", "day", "opening", "issued_paid", "issued_free", "spent", "expired", "reversed", "moved", "closing",
    ]

    package func days(on pool: PostgresPool) async throws -> [CurrencyDay] {
        CurrencyLedger.days(of: try await Self.timelines(bundleID: bundleID, knownAt: knownAt, on: pool), from: from, to: to)
    }

    /// What the app's users hold of each currency at `instant`, or nil when the app has more than
    /// `limit` users (each is read: the console asks this on a page, the export at night).
    package static func outstanding(bundleID: String, at instant: Date, limit: Int, on pool: PostgresPool) async throws -> [String: Int64]?
    {
        let count = try await pool.query("SELECT count(*) AS n FROM ledger.user_timelines WHERE bundle_id = $1", [bundleID])[0]["n"].int()
        guard count <= limit else { return nil }
        var held: [String: Int64] = [:]
        for timeline in try await timelines(bundleID: bundleID, knownAt: nil, on: pool) {
            held.merge(Wallet.replayed(timeline.balanceEntries, until: instant).balances, uniquingKeysWith: +)
        }
        return held
    }

    /// Every user's timeline, from the log as known at `knownAt`.
    static func timelines(bundleID: String, knownAt: Date?, on pool: PostgresPool) async throws -> [UserTimeline] {
        let users = try await pool.query(
            "SELECT user_id FROM ledger.user_timelines WHERE bundle_id = $1 ORDER BY user_id", [bundleID]
        ).map { try $0["user_id"].string() }
        var timelines: [UserTimeline] = []
        for start in stride(from: 0, to: users.count, by: 200) {
            let chunk = Array(users[start..<min(start + 200, users.count)])
            timelines += try await pool.withConnection { [bundleID, knownAt] connection in
                try chunk.map { user in
                    try UsersProjection.userLedger(
                        bundleID: bundleID, userID: user, owners: "ledger.transaction_owners", recordedBy: knownAt, on: connection
                    ).timeline(of: user)
                }
            }
        }
        return timelines
    }

    /// The figures after the currency and the day, in the columns' order.
    static func figures(_ day: CurrencyDay) -> [Int64] {
        [day.opening, day.issuedPaid, day.issuedFree, day.spent, day.expired, day.reversed, day.moved, day.closing]
    }

    static func fields(_ day: CurrencyDay) -> [String] {
        [day.currency, String(RFC3339.string(day.day).prefix(10))] + figures(day).map(String.init)
    }

    package static func csvHeader() -> String { columns.joined(separator: ",") + "\r\n" }

    package static func csvLine(_ day: CurrencyDay) -> String { FinanceExport.csvRecord(fields(day)) }

    package static func jsonLine(_ day: CurrencyDay) -> String {
        var object: [String: Any] = ["currency": day.currency, "day": String(RFC3339.string(day.day).prefix(10))]
        for (column, value) in zip(columns.dropFirst(2), figures(day)) { object[column] = value }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self) + "\n"
    }
}
