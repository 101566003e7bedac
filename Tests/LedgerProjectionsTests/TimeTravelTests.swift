import Foundation
import LedgerCore
import LedgerDomainTestSupport
import LedgerEventStore
import LedgerPostgres
import LedgerProjections
import LedgerSchema
import LedgerTestSupport
import Testing

/// Both axes of time against a real PostgreSQL: facts appended in the order they arrived (some of
/// Apple's late), live answers taken from the projection as they went, then asked again.
@Suite struct TimeTravelTests {
    /// (1) every live answer taken at K is what `known_at: K` answers afterwards; (3) a rebuild
    /// from zero answers every (at, known_at) pair as before; (4) a knowledge time at or after the
    /// last recording equals none.
    @Test(arguments: [UInt64(11), 2_024])
    func liveAnswersAreReproducedAfterwardsAndARebuildChangesNone(seed: UInt64) async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 2, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        let arrivals = LateArrivals(RandomHistory(seed: seed, steps: 50), seed: seed)
        let reader = UserStateReader(pool: pool)
        var live: [(user: String, state: UserState)] = []
        for chunk in stride(from: 0, to: arrivals.facts.count, by: 12) {
            try await append(arrivals.facts[chunk..<min(chunk + 12, arrivals.facts.count)], to: store)
            try await drainLive(pool)
            for user in RandomHistory.users { live.append((user, try await reader.currentState(bundleID: bundleID, userID: user))) }
        }
        for (user, state) in live {
            let again = try await reader.state(bundleID: bundleID, userID: user, at: state.asOf, knownAt: state.asOf)
            #expect(again == state, "seed \(seed), \(user) known at \(state.asOf)")
        }

        // Every pair of a business instant and a knowledge instant, before and after a rebuild.
        let knowledge = live.map(\.state.asOf).striding(5)
        let instants = arrivals.facts.map(\.occurredAt).sorted().striding(5)
        func answers() async throws -> [UserState] {
            var all: [UserState] = []
            for user in RandomHistory.users {
                for instant in instants {
                    for known in [nil] + knowledge {
                        all.append(try await reader.state(bundleID: bundleID, userID: user, at: instant, knownAt: known))
                    }
                }
            }
            return all
        }
        let before = try await answers()
        let rebuilt = try await offThePool {
            try ProjectionRebuilder(logger: TestCluster.quietLogger) { try PostgresConnection.connect(configuration) }.rebuild()
        }
        #expect(rebuilt.version == 2)
        #expect(try await answers() == before, "seed \(seed): a rebuild changed an answer")

        let lastRecorded = try await pool.query("SELECT max(recorded_at) AS t FROM ledger.events")[0]["t"].date()
        for user in RandomHistory.users {
            for instant in instants {
                #expect(
                    try await reader.state(bundleID: bundleID, userID: user, at: instant, knownAt: lastRecorded)
                        == reader.state(bundleID: bundleID, userID: user, at: instant, knownAt: nil), "seed \(seed), \(user)")
            }
        }
        await pool.close()
    }
}

/// Migration 0010 on a database projected before it: the finance rows gain `recorded_at` from the
/// log, as a rebuild would compute it.
@Suite struct FinanceRecordedAtMigrationTests {
    @Test func rowsProjectedBeforeTheMigrationGainWhenTheyWereRecorded() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 2, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        try await append(RandomHistory(seed: 31, steps: 60).facts, to: store)
        try await drainLive(pool)
        let select = "SELECT original_transaction_id, seq, kind, recorded_at FROM ledger.finance_rows ORDER BY 1, 2"
        func rows() async throws -> [(String, Int, String, Date)] {
            try await pool.query(select).map {
                (try $0["original_transaction_id"].string(), try $0["seq"].int(), try $0["kind"].string(), try $0["recorded_at"].date())
            }
        }
        let expected = try await rows()
        #expect(expected.count > 10)
        // The projection as 0009 left it: no column, the migration not applied.
        let owner = try PostgresConnection.connect(configuration)
        try owner.execute(
            script: """
                DROP VIEW ledger.finance_rows;
                ALTER TABLE ledger.finance_rows_v1 DROP COLUMN recorded_at;
                CREATE VIEW ledger.finance_rows AS SELECT * FROM ledger.finance_rows_v1;
                DELETE FROM ledger.schema_migrations WHERE version = 10;
                """)
        let report = try Migrator(migrations: LedgerSchema.migrations(), logger: TestCluster.quietLogger).migrate(owner)
        #expect(report.applied.map(\.version) == [10])
        let migrated = try await rows()
        #expect(migrated.count == expected.count)
        for (after, before) in zip(migrated, expected) {
            #expect(after.0 == before.0 && after.1 == before.1)
            // A transaction refunded (or reversed) twice: both rows get the first one's instant.
            if after.2 != "purchase" && after.2 != "renewal" {
                #expect(after.3 <= before.3)
            } else {
                #expect(after.3 == before.3, "\(after.0) \(after.2) \(after.3.timeIntervalSince1970) vs \(before.3.timeIntervalSince1970)")
            }
        }
        await pool.close()
    }
}
