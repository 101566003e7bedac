import Foundation
import LedgerCore
import LedgerDomainTestSupport
import LedgerEventStore
import LedgerPostgres
import LedgerProjections
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
        let configuration = try TestCluster.database()
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
                    for known in [nil] + knowledge { all.append(try await reader.state(bundleID: bundleID, userID: user, at: instant, knownAt: known)) }
                }
            }
            return all
        }
        let before = try await answers()
        let rebuilt = try ProjectionRebuilder(logger: TestCluster.quietLogger) { try PostgresConnection.connect(configuration) }.rebuild()
        #expect(rebuilt.version == 2)
        #expect(try await answers() == before, "seed \(seed): a rebuild changed an answer")

        let lastRecorded = try await pool.query("SELECT max(recorded_at) AS t FROM ledger.events")[0]["t"].date()
        for user in RandomHistory.users {
            for instant in instants {
                #expect(try await reader.state(bundleID: bundleID, userID: user, at: instant, knownAt: lastRecorded)
                        == reader.state(bundleID: bundleID, userID: user, at: instant, knownAt: nil), "seed \(seed), \(user)")
            }
        }
        await pool.close()
    }
}
