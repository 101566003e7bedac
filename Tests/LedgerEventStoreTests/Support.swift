import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import Testing

/// A store on a fresh database, connected as the application role like the server is. Callers
/// wait for a connection as long as a slow, busy machine needs (24 racing appends on 8
/// connections once waited out the 10 s default there): how long a caller may wait is the pool's
/// own tests' subject, not the store's.
func makeStore(size: Int = 4) async throws -> (EventStore, PostgresConfiguration) {
    let configuration = try await TestCluster.database()
    let pool = PostgresPool(
        configuration: TestCluster.applicationRole(configuration), size: size, waitLimit: .seconds(60), logger: TestCluster.quietLogger)
    return (EventStore(pool: pool, logger: TestCluster.quietLogger), configuration)
}

func countEvents(_ configuration: PostgresConfiguration) throws -> Int {
    try PostgresConnection.connect(configuration).query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
}
