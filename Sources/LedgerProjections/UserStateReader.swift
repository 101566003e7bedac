import Foundation
import LedgerCore
import LedgerEventStore
import LedgerPostgres

/// Answers "what does user X own" — now from the live projection (one indexed row), or as of a
/// past instant by replaying the user's facts known at that instant.
public struct UserStateReader: Sendable {
    let pool: PostgresPool

    public init(pool: PostgresPool) { self.pool = pool }

    /// The stored timeline of the active version (through the `ledger.user_timelines` view).
    public func timeline(bundleID: String, userID: String) async throws -> UserTimeline {
        let rows = try await pool.query("SELECT timeline::text AS t FROM ledger.user_timelines WHERE bundle_id = $1 AND user_id = $2",
                                        [bundleID, userID])
        guard let text = rows.first?["t"].text else { return UserTimeline(userID: userID) }
        return try LedgerEvent.decoder.decode(UserTimeline.self, from: Data(text.utf8))
    }

    public func state(bundleID: String, userID: String, at instant: Date = Date()) async throws -> UserState {
        try await timeline(bundleID: bundleID, userID: userID).state(at: instant)
    }

    /// As of `instant`, from the facts with business time ≤ `instant` (time travel).
    public func state(bundleID: String, userID: String, asOf instant: Date) async throws -> UserState {
        let ledger = try await pool.withConnection { connection in
            let originals = try connection.query(
                "SELECT original_transaction_id FROM ledger.transaction_owners WHERE bundle_id = $1 AND user_id = $2",
                [bundleID, userID]).map { try $0[0].string() }
            let streams = [LedgerStream.app(bundleID), LedgerStream.user(bundleID, userID: userID)]
                + originals.map { LedgerStream.purchase(bundleID, originalTransactionID: $0) }
            let rows = try connection.query(EventStore.selectEventsSQL + " WHERE e.stream = ANY($1::text[]) AND e.occurred_at <= $2 ORDER BY e.position",
                                            [PostgresTextArray(streams), instant])
            var ledger = AppLedger(bundleID: bundleID)
            for row in rows {
                if let (_, fact) = try StoredFacts.fact(from: RecordedEvent(row: row)) { ledger.apply(fact) }
            }
            return ledger
        }
        return ledger.userState(userID, at: instant)
    }
}
