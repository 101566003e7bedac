import Foundation
import LedgerCore
import LedgerDomainTestSupport
import LedgerEventStore
import LedgerPostgres
import LedgerSchema
import LedgerTestSupport
import Testing

/// Migration 0018 on a database an earlier version filled: its finance rows gain the offer each
/// transaction was bought with, read from the log as the projection now computes it.
@Suite struct FinanceOfferMigrationTests {
    @Test func rowsWrittenBeforeTheOfferColumnsAreFilledFromTheLog() async throws {
        let configuration = try await TestCluster.database(migrations: 17)
        let owner = try PostgresConnection.connect(configuration)
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 2, logger: TestCluster.quietLogger)
        defer { Task { await pool.close() } }
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        var offered = SampleCatalogue.transaction("o-1", product: "pro.monthly", at: day(0), expires: day(30))
        offered.offerType = 3
        offered.offerIdentifier = "SPRING25"
        let plain = SampleCatalogue.transaction("p-1", product: "pro.monthly", at: day(1), expires: day(31))
        let facts = [
            RecordedFact(event: .purchased(offered), occurredAt: day(0), sequence: 1),
            RecordedFact(event: .purchased(plain), occurredAt: day(1), sequence: 2),
        ]
        try await append(facts, to: store)
        // The rows as the earlier version's projection wrote them: no offer columns.
        let version = try owner.query("SELECT active_version AS v FROM ledger.projections WHERE name = 'users'")[0]["v"].int()
        for (seq, id) in [(0, "o-1"), (0, "p-1")] {
            try owner.query(
                """
                INSERT INTO ledger.finance_rows_v\(version) (bundle_id, original_transaction_id, seq, kind, transaction_id, user_id, product_id,
                                                         quantity, price, currency, storefront, environment, occurred_at, recorded_at)
                VALUES ($1, $2, $3, 'purchase', $2, NULL, 'pro.monthly', 1, 4990, 'EUR', 'FRA', 'Production', now(), now())
                """, [bundleID, id, seq])
        }

        try Migrator(migrations: LedgerSchema.migrations(), logger: TestCluster.quietLogger).migrate(owner)

        let rows = try owner.query("SELECT transaction_id, offer_type, offer_id FROM ledger.finance_rows ORDER BY transaction_id")
        #expect(rows.count == 2)
        #expect(
            try rows[0]["transaction_id"].string() == "o-1" && rows[0]["offer_type"].int() == 3 && rows[0]["offer_id"].text == "SPRING25")
        #expect(try rows[1]["transaction_id"].string() == "p-1" && rows[1]["offer_type"].isNull && rows[1]["offer_id"].isNull)
        // What the projection computes from the same facts says the same.
        let computed = AppLedger(bundleID: bundleID, facts: facts).financeRows(ofTransaction: "o-1")
        #expect(computed.first?.offerType == 3 && computed.first?.offerIdentifier == "SPRING25")
    }
}
