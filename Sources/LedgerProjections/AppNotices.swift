import LedgerCore
import LedgerEventStore
import LedgerFacts
import LedgerPostgres

extension UserStateReader {
    /// Apple's notifications about the app rather than one purchase — external purchase tokens,
    /// mass-extension summaries, withdrawn consent, tests — newest first: what the app's console
    /// page lists so that support and finance see them at all.
    package func appNotices(bundleID: String, limit: Int = 50) async throws -> [RecordedFact] {
        try await pool.withConnection { connection in
            try connection.query(
                EventStore.selectEventsSQL + " WHERE e.stream = $1 ORDER BY e.version DESC LIMIT $2",
                [LedgerStream.notifications(bundleID), limit]
            )
            .compactMap { row in try StoredFacts.fact(from: RecordedEvent(row: row))?.fact }
        }
    }
}
