import Foundation
import LedgerCore
import LedgerDomainTestSupport
import LedgerEventStore
import LedgerPostgres
import LedgerProjections
import LedgerTestSupport
import Testing

/// The finance metrics as a projection: random histories appended in the order they arrived (some
/// of Apple's facts late), applied batch by batch by the live path, summed by SQL — equal, day by
/// day, to a direct recomputation from every fact; and equal again after a rebuild from zero.
@Suite struct MetricsProjectionTests {
    @Test(arguments: [UInt64(6), 77, 2_026])
    func theDailySeriesEqualADirectRecomputationLiveAndRebuilt(seed: UInt64) async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 2, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        let arrivals = LateArrivals(RandomHistory(seed: seed, steps: 80), seed: seed)
        // The direct recomputation: every original transaction's facts, from the facts themselves.
        func recomputed(_ facts: ArraySlice<RecordedFact>, from first: Date, through last: Date) -> [MetricPoint] {
            let byTransaction = Dictionary(grouping: facts.filter { $0.event.originalTransactionID != nil }) {
                $0.event.originalTransactionID!
            }
            let contributions = byTransaction.flatMap { SubscriptionMetrics.contributions(of: $0.value, originalTransactionID: $0.key) }
            return SubscriptionMetrics.daily(contributions, from: first, through: last).filter { $0.environment == .production }
        }
        let first = SubscriptionMetrics.dayStart(arrivals.facts.map(\.occurredAt).min()!).addingTimeInterval(-2 * 86_400)
        let last = SubscriptionMetrics.dayStart(arrivals.facts.map(\.occurredAt).max()!).addingTimeInterval(400 * 86_400)
        let reader = MetricsReader(reads: .primaryOnly(pool, logger: TestCluster.quietLogger))
        // After every batch, as the facts arrived: what the live path stored is what they say.
        for chunk in stride(from: 0, to: arrivals.facts.count, by: 9) {
            let upTo = min(chunk + 9, arrivals.facts.count)
            try await append(arrivals.facts[chunk..<upTo], to: store)
            try await drainLive(pool)
            let live = try await reader.daily(bundleID: bundleID, environment: .production, from: first, through: last)
            let expected = recomputed(arrivals.facts[..<upTo], from: first, through: last)
            #expect(
                live == expected,
                "seed \(seed), after \(upTo) facts: the series differ on \(Set(live).symmetricDifference(expected).prefix(4))")
        }
        let expected = recomputed(arrivals.facts[...], from: first, through: last)
        #expect(
            Set(expected.map(\.kind)).isSuperset(of: [.active, .mrr, .new, .renewed, .churned, .revenue, .refunds]),
            "seed \(seed) exercises the metrics")
        // A window in the middle: running sums must start from everything before it.
        let middle = first.addingTimeInterval(40 * 86_400), end = middle.addingTimeInterval(30 * 86_400)
        #expect(
            try await reader.daily(bundleID: bundleID, environment: .production, from: middle, through: end)
                == expected.filter { $0.day >= middle && $0.day <= end })

        _ = try await offThePool {
            try ProjectionRebuilder(logger: TestCluster.quietLogger) { try PostgresConnection.connect(configuration) }.rebuild()
        }
        #expect(
            try await reader.daily(bundleID: bundleID, environment: .production, from: first, through: last) == expected,
            "seed \(seed): a rebuild from zero computes the same series")
        await pool.close()
    }

    /// A family-sharing revocation moves no money, yet ends the subscription's access: the live
    /// path recomputes the transaction's contributions for it too.
    @Test func aFamilyRevocationAloneInItsBatchEndsTheActiveSpan() async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 2, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        let bought = SampleCatalogue.transaction("f1", product: "pro.yearly", at: day(0.5), expires: day(365.5), ownership: .familyShared)
        try await append([RecordedFact(event: .purchased(bought), occurredAt: day(0.5), sequence: 1)], to: store)
        try await drainLive(pool)
        let revoked = RevocationFacts(
            environment: .production, transactionID: "f1", originalTransactionID: "f1", revocationDate: day(10.5),
            kind: .familyRevoke, signedDate: day(10.5))
        try await append([RecordedFact(event: .revoked(revoked), occurredAt: day(10.5), sequence: 2)], to: store)
        try await drainLive(pool)
        let reader = MetricsReader(reads: .primaryOnly(pool, logger: TestCluster.quietLogger))
        let start = SubscriptionMetrics.dayStart(day(0.5))
        let active = try await reader.daily(
            bundleID: bundleID, environment: .production, from: start, through: start.addingTimeInterval(20 * 86_400)
        )
        .filter { $0.kind == .active }
        #expect(
            active.map(\.day) == (0..<10).map { start.addingTimeInterval(Double($0) * 86_400) },
            "active on the ten days whose end comes before the revocation: \(active.count) days")
        await pool.close()
    }
}
