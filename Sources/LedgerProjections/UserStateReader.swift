import Foundation
import LedgerCore
import LedgerEventStore
import LedgerFormats
import LedgerPostgres
import Logging

/// Answers "what does user X own" — now from the live projection (one indexed row), or on both
/// axes of time (`at`: valid time, `knownAt`: what was recorded by then) by replaying the user's
/// facts from the log (`AppLedger.userState`). Reads go to a replica when
/// there are replicas (`ReadReplicas`), once it has replayed the user's last change; decisions
/// (`ledger(…)`) always read the primary.
package struct UserStateReader: Sendable {
    let pool: PostgresPool
    package let cache: TimelineCache?
    let replicas: ReadReplicas

    /// What the app's users hold of each currency now, for an app of at most `limit` users (nil
    /// beyond: the currency export gives it).
    package func outstandingBalances(bundleID: String, limit: Int = 5_000) async throws -> [String: Int64]? {
        try await CurrencyExport.outstanding(bundleID: bundleID, at: Date(), limit: limit, on: pool)
    }

    package init(pool: PostgresPool, cache: TimelineCache? = nil, replicas: ReadReplicas? = nil) {
        self.pool = pool
        self.cache = cache
        self.replicas = replicas ?? .primaryOnly(pool, fence: cache?.fence ?? ReadFence(), logger: Logger(label: "ledger.reads"))
    }

    /// The stored timeline of the active version (through the `ledger.user_timelines` view),
    /// from the cache when it has it. `atLeast`: a write the caller was just answered for.
    package func timeline(bundleID: String, userID: String, atLeast written: LogPosition? = nil) async throws -> UserTimeline {
        // A position this process has not heard announced yet may be newer than what it cached.
        let heard = written.map { $0 <= replicas.fence.required(bundleID: bundleID, userID: userID) } ?? true
        if heard, let cached = cache?.timeline(bundleID: bundleID, userID: userID) { return cached }
        let epoch = cache?.epoch ?? 0
        let fence = await replicas.required(bundleID: bundleID, userID: userID, minimum: written)
        let text = try await replicas.read(atLeast: fence) { connection in
            try connection.query(
                "SELECT timeline AS t FROM ledger.user_timelines WHERE bundle_id = $1 AND user_id = $2",
                [bundleID, userID]
            ).first?["t"].text
        }
        let timeline = try text.map { try StorageDecoder.decode(UserTimeline.self, from: $0) } ?? UserTimeline(userID: userID)
        cache?.store(timeline, bundleID: bundleID, userID: userID, readSince: epoch)
        return timeline
    }

    /// The live answer: the projected timeline — every fact known now, for what the user owns now —
    /// evaluated at `instant` (now; a later instant tells what will have lapsed by then). Equal to
    /// `state(…, at: now, knownAt: now)`, from one indexed row instead of the log.
    package func currentState(
        bundleID: String, userID: String, at instant: Date = Date(), atLeast written: LogPosition? = nil
    ) async throws -> UserState {
        try await timeline(bundleID: bundleID, userID: userID, atLeast: written).state(at: instant)
    }

    /// Every fact that concerns the user, read from the log now (not the projection's rows):
    /// what decisions about the user are made on. `withEvidence`: the audit-only facts too (what
    /// was already asked of Apple, signed, or said by it).
    package func ledger(bundleID: String, userID: String, withEvidence: Bool = false) async throws -> AppLedger {
        try await pool.withConnection { connection in
            try Self.ledger(bundleID: bundleID, userID: userID, withEvidence: withEvidence, on: connection)
        }
    }

    /// The same read on a connection the caller holds (a decision made inside its transaction).
    package static func ledger(
        bundleID: String, userID: String, withEvidence: Bool = false, on connection: PostgresConnection
    ) throws -> AppLedger {
        try UsersProjection.userLedger(
            bundleID: bundleID, userID: userID, owners: "ledger.transaction_owners", recordedBy: nil,
            withEvidence: withEvidence, on: connection)
    }

    /// Who owns `originalTransactionID` now (nil: nobody the ledger knows) and every fact about
    /// them, read from the log as `ledger(…)` reads it, in one round trip: for an answer Apple
    /// waits for about a subscription it names.
    package func ledger(bundleID: String, owning originalTransactionID: String) async throws -> (owner: String?, ledger: AppLedger) {
        let ledger = try await pool.withConnection { connection in
            try UsersProjection.subscriptionLedger(
                bundleID: bundleID, originalTransactionID: originalTransactionID, owners: "ledger.transaction_owners", on: connection)
        }
        return (ledger.owner(of: originalTransactionID), ledger)
    }

    /// Every fact that touched the user, in recording order, Apple's notifications included:
    /// what a support agent reads to answer "why can't I access premium?".
    /// `knownAt`: only the facts recorded by then (what the trail showed at that instant).
    package func auditTrail(
        bundleID: String, userID: String, knownAt: Date? = nil, atLeast written: LogPosition? = nil
    ) async throws -> [RecordedFact] {
        try await replicas.read(atLeast: await replicas.required(bundleID: bundleID, userID: userID, minimum: written)) { connection in
            try UsersProjection.userLedger(
                bundleID: bundleID, userID: userID, owners: "ledger.transaction_owners", recordedBy: knownAt,
                withEvidence: true, on: connection
            ).auditTrail(userID)
        }
    }

    /// Time travel: what the user was entitled to at `instant` (valid time) by the facts recorded
    /// by `knownAt` (nil: every fact known now), replayed from the log — the same computation the
    /// projection's timelines come from.
    package func state(
        bundleID: String, userID: String, at instant: Date, knownAt: Date?, atLeast written: LogPosition? = nil
    ) async throws -> UserState {
        let ledger = try await replicas.read(atLeast: await replicas.required(bundleID: bundleID, userID: userID, minimum: written)) {
            connection in
            try UsersProjection.userLedger(
                bundleID: bundleID, userID: userID, owners: "ledger.transaction_owners", recordedBy: knownAt, on: connection)
        }
        return ledger.userState(userID, at: instant)
    }

    /// Who a support query names: the user of that id, if there is one, and the owners of the
    /// transaction or original transaction of that id (with the original transaction's id).
    package func search(
        bundleID: String, for query: String
    ) async throws -> (isUser: Bool, owners: [(userID: String, originalTransactionID: String)]) {
        var trip = RoundTrip()
        let user = trip.add(
            PipelinedStatement("SELECT user_id FROM ledger.user_timelines WHERE bundle_id = $1 AND user_id = $2", [bundleID, query]))
        let owners = trip.add(
            PipelinedStatement(
                """
                SELECT DISTINCT o.user_id, f.original_transaction_id FROM ledger.finance_rows f
                  JOIN ledger.transaction_owners o ON o.bundle_id = f.bundle_id AND o.original_transaction_id = f.original_transaction_id
                 WHERE f.bundle_id = $1 AND (f.transaction_id = $2 OR f.original_transaction_id = $2)
                UNION SELECT o.user_id, o.original_transaction_id FROM ledger.transaction_owners o
                 WHERE o.bundle_id = $1 AND o.original_transaction_id = $2
                """, [bundleID, query]))
        let search = trip
        let found = try await pool.withConnection { try $0.send(search) }
        return (found[user].count > 0, try found[owners].map { (try $0["user_id"].string(), try $0["original_transaction_id"].string()) })
    }
}
