import Foundation
import LedgerCore
import LedgerDomainTestSupport
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import Testing

@testable import LedgerProjections

/// The currency ledger read a page of users at a time — the app's streams once a page, the
/// users' events together — closes the same books as each user read alone, the way a user's
/// state is read, whatever the page's size and at every close.
@Suite struct CurrencyExportTests {
    @Test(arguments: [UInt64(5), 77])
    func readingUsersAPageAtATimeClosesTheSameBooksAsReadingEachAlone(seed: UInt64) async throws {
        let configuration = try await TestCluster.database()
        let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: 2, logger: TestCluster.quietLogger)
        let store = EventStore(pool: pool, logger: TestCluster.quietLogger)
        let history = RandomHistory(seed: seed, steps: 80)
        try await append(history.facts, to: store)
        try await drainLive(pool)

        let users = try await pool.query("SELECT user_id FROM ledger.user_timelines WHERE bundle_id = $1", [bundleID])
            .map { try $0["user_id"].string() }
        #expect(users.count == RandomHistory.users.count)
        let occurred = history.facts.map(\.occurredAt).sorted()
        // A range starting a third of the way in: its openings hold what came before.
        let from = occurred[occurred.count / 3], to = min(from + 360 * 86_400, try #require(occurred.last) + 86_400)
        let recorded = try await pool.query("SELECT recorded_at AS t FROM ledger.events ORDER BY position").map { try $0["t"].date() }
        for knownAt in [nil] + recorded.striding(4) {
            let alone = try await pool.withConnection { connection in
                try users.map { user in
                    try UsersProjection.userLedger(
                        bundleID: bundleID, userID: user, owners: "ledger.transaction_owners", recordedBy: knownAt, on: connection
                    ).timeline(of: user)
                }
            }
            let expected = CurrencyLedger.days(of: alone, from: from, to: to)
            for pageSize in [1, 2, CurrencyExport.pageSize] {
                let paged = try await CurrencyExport(bundleID: bundleID, from: from, to: to, knownAt: knownAt).days(
                    on: pool, pageSize: pageSize)
                #expect(paged == expected, "seed \(seed), known at \(String(describing: knownAt)), \(pageSize) users a page")
            }
            if knownAt == nil {
                // Books with something in them: both currencies, openings, spends, the game's grants.
                #expect(Set(expected.map(\.currency)) == ["coins", "gems"] && expected.contains { $0.spent > 0 }, "seed \(seed)")
                #expect(expected.contains { $0.issuedFree > 0 } && expected.contains { $0.opening > 0 }, "seed \(seed)")
            }
        }
        await pool.close()
    }
}
