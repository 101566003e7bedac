import Foundation
import LedgerEventStore
import LedgerPostgres
import LedgerTestSupport
import Testing

/// A store on a fresh database, connected as the application role like the server is.
func makeStore(size: Int = 4) throws -> (EventStore, PostgresConfiguration) {
    let configuration = try TestCluster.database()
    let pool = PostgresPool(configuration: TestCluster.applicationRole(configuration), size: size, logger: TestCluster.quietLogger)
    return (EventStore(pool: pool, logger: TestCluster.quietLogger), configuration)
}

func countEvents(_ configuration: PostgresConfiguration) throws -> Int {
    try PostgresConnection.connect(configuration).query("SELECT count(*) AS n FROM ledger.events")[0]["n"].int()
}

/// Polls `condition` for up to `seconds`; fails the test if it never holds.
func waitUntil(seconds: Double = 20, _ condition: @Sendable () -> Bool) async throws {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() {
        guard Date() < deadline else {
            Issue.record("condition not met within \(seconds) s")
            return
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}
