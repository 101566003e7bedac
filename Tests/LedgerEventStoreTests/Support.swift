import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import Testing

/// A store on a fresh database, connected as the application role like the server is.
func makeStore(size: Int = 4) async throws -> (EventStore, PostgresConfiguration) {
    let configuration = try await TestCluster.database()
    let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: size, logger: TestCluster.quietLogger)
    return (EventStore(pool: pool, logger: TestCluster.quietLogger), configuration)
}

func countEvents(_ configuration: PostgresConfiguration) throws -> Int {
    try PostgresConnection.connect(configuration).query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
}
