import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import Testing

@Suite struct ImmutabilityTests {
    @Test(arguments: [
        "UPDATE ledger.events SET data = '{}'::jsonb",
        "DELETE FROM ledger.events",
        "TRUNCATE ledger.events CASCADE",
    ])
    func theApplicationRoleCannotRewriteEvents(statement: String) async throws {
        let (store, configuration) = try await makeStore()
        try await store.append([testEvent()], to: uniqueStream())
        // As the application role: refused by privileges.
        let app = try PostgresConnection.connect(TestCluster.applicationRole(configuration))
        let denied = try #require(throws: PostgresError.self) { try app.query(statement) }
        #expect(denied.sqlState == "42501")
        // As the owner: refused by the trigger.
        let owner = try PostgresConnection.connect(configuration)
        let refused = try #require(throws: PostgresError.self) { try owner.query(statement) }
        #expect(refused.sqlState == "LE003")
        #expect(try countEvents(configuration) == 1)
    }
}
