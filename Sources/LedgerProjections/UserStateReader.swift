import Foundation
import LedgerCore
import LedgerEventStore
import LedgerPostgres

/// Answers "what does user X own" — now from the live projection (one indexed row), or as of a
/// past instant by replaying the user's facts known at that instant.
public struct UserStateReader: Sendable {
    let pool: PostgresPool
    let cache: TimelineCache?

    public init(pool: PostgresPool, cache: TimelineCache? = nil) {
        self.pool = pool
        self.cache = cache
    }

    /// The stored timeline of the active version (through the `ledger.user_timelines` view),
    /// from the cache when it has it.
    public func timeline(bundleID: String, userID: String) async throws -> UserTimeline {
        if let cached = cache?.timeline(bundleID: bundleID, userID: userID) { return cached }
        let epoch = cache?.epoch ?? 0
        let rows = try await pool.query("SELECT timeline AS t FROM ledger.user_timelines WHERE bundle_id = $1 AND user_id = $2",
                                        [bundleID, userID])
        let timeline = try rows.first?["t"].text.map { try StorageDecoder.decode(UserTimeline.self, from: $0) }
            ?? UserTimeline(userID: userID)
        cache?.store(timeline, bundleID: bundleID, userID: userID, readSince: epoch)
        return timeline
    }

    public func state(bundleID: String, userID: String, at instant: Date = Date()) async throws -> UserState {
        try await timeline(bundleID: bundleID, userID: userID).state(at: instant)
    }

    /// Every fact that concerns the user, read from the log now (not the projection's rows):
    /// what decisions about the user are made on.
    public func ledger(bundleID: String, userID: String) async throws -> AppLedger {
        try await pool.withConnection { connection in try Self.ledger(bundleID: bundleID, userID: userID, on: connection) }
    }

    /// The same read on a connection the caller holds (a decision made inside its transaction).
    public static func ledger(bundleID: String, userID: String, on connection: PostgresConnection) throws -> AppLedger {
        try UsersProjection.userLedger(bundleID: bundleID, userID: userID, owners: "ledger.transaction_owners", knownAt: nil, on: connection)
    }

    /// Every fact that touched the user, in recording order, Apple's notifications included:
    /// what a support agent reads to answer "why can't I access premium?".
    public func auditTrail(bundleID: String, userID: String) async throws -> [RecordedFact] {
        try await pool.withConnection { connection in
            try UsersProjection.userLedger(bundleID: bundleID, userID: userID, owners: "ledger.transaction_owners", knownAt: nil,
                                           withEvidence: true, on: connection).auditTrail(userID)
        }
    }

    /// As of `instant`, from the facts with business time ≤ `instant` (time travel).
    public func state(bundleID: String, userID: String, asOf instant: Date) async throws -> UserState {
        let ledger = try await pool.withConnection { connection in
            try UsersProjection.userLedger(bundleID: bundleID, userID: userID, owners: "ledger.transaction_owners", knownAt: instant, on: connection)
        }
        return ledger.userState(userID, at: instant)
    }
}
