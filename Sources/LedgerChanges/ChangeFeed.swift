import Foundation
import LedgerPostgres

/// The change feed: an app's changes in announcement order after a cursor, answered at once when
/// there are some, or — with a wait — as soon as one is announced.
package struct ChangeFeed: Sendable {
    let pool: PostgresPool
    let notifications: ChangeNotifications

    package init(pool: PostgresPool, notifications: ChangeNotifications) {
        self.pool = pool
        self.notifications = notifications
    }

    package struct Page: Sendable {
        /// Each change's JSON, as a webhook delivers it.
        package var bodies: [String]
        /// The cursor to ask with next: the last position listed, or the one asked with.
        package var next: Int64
    }

    package func page(bundleID: String, after: Int64, limit: Int, wait: Duration = .zero) async throws -> Page {
        let clock = ContinuousClock()
        let deadline = clock.now + wait
        while true {
            // Read the mark before the table: a change committed between the two raises it, so the
            // wait below returns at once instead of sleeping through it.
            let mark = notifications.position
            let rows = try await pool.query(
                """
                SELECT position, body FROM ledger.changes WHERE bundle_id = $1 AND position > $2 ORDER BY position LIMIT $3
                """, [bundleID, after, limit])
            if rows.count > 0 || clock.now >= deadline {
                return Page(
                    bodies: try rows.map { try $0["body"].string() }, next: try rows.last.map { try $0["position"].int64() } ?? after)
            }
            // Another app's change wakes this too; then it reads again and waits for the rest.
            // The slice keeps a poll going should a notification be lost with a connection.
            _ = await notifications.wait(after: max(mark, after), timeout: min(deadline - clock.now, .seconds(1)))
        }
    }
}
